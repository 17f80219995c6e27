// Package v1 is version 1 of the RestoreItemAction plugin interface.
package v1

import (
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
)

// RestoreItemAction changes an item before it is restored, skips it, or asks for other
// items to be restored first.
type RestoreItemAction interface {
	// AppliesTo says which items the action is called for.
	AppliesTo() (ria.ResourceSelector, error)
	// Execute is called for every item the action applies to.
	Execute(input *ria.ExecuteInput) (*ria.ExecuteOutput, error)
}
