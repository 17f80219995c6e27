// Package v2 is version 2 of the RestoreItemAction plugin interface: version 1 plus
// AreAdditionalItemsReady, which lets a plugin hold an item back until the additional
// items it asked for are ready.
package v2

import (
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	v1 "github.com/restoregraph/restoregraph/plugin/restoreitemaction/v1"
)

// RestoreItemAction is version 2 of the interface.
type RestoreItemAction interface {
	v1.RestoreItemAction
	// AreAdditionalItemsReady reports whether the additional items an Execute returned
	// are ready, for an output with WaitForAdditionalItems set.
	AreAdditionalItemsReady(additionalItems []ria.ResourceIdentifier, restore *ria.Restore) (bool, error)
}

// AdaptV1 returns a version 2 action for a version 1 one. Version 1 plugins never ask
// to wait, so the adapter reports additional items ready at once.
func AdaptV1(a v1.RestoreItemAction) RestoreItemAction { return v1Adapter{a} }

type v1Adapter struct{ v1.RestoreItemAction }

func (v1Adapter) AreAdditionalItemsReady([]ria.ResourceIdentifier, *ria.Restore) (bool, error) {
	return true, nil
}
