// Package v2 is version 2 of the RestoreItemAction plugin interface: version 1 plus
// AreAdditionalItemsReady, which lets a plugin hold an item back until the additional
// items it asked for are ready, and, for an action that implements AsyncAction, an
// operation that goes on after Execute returns.
package v2

import (
	"context"
	"time"

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

// ContextAction is a RestoreItemAction whose calls take a context, so that cancelling
// the restore, or its deadline, reaches a call under way (an out-of-process plugin's
// gRPC call). The restore uses these methods when an action has them.
type ContextAction interface {
	ExecuteContext(ctx context.Context, in *ria.ExecuteInput) (*ria.ExecuteOutput, error)
	AreAdditionalItemsReadyContext(ctx context.Context, items []ria.ResourceIdentifier, restore *ria.Restore) (bool, error)
}

// Execute runs a's Execute, with ctx when a takes one.
func Execute(ctx context.Context, a RestoreItemAction, in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	if ca, ok := a.(ContextAction); ok {
		return ca.ExecuteContext(ctx, in)
	}
	return a.Execute(in)
}

// AreAdditionalItemsReady runs a's AreAdditionalItemsReady, with ctx when a takes one.
func AreAdditionalItemsReady(ctx context.Context, a RestoreItemAction, items []ria.ResourceIdentifier, restore *ria.Restore) (bool, error) {
	if ca, ok := a.(ContextAction); ok {
		return ca.AreAdditionalItemsReadyContext(ctx, items, restore)
	}
	return a.AreAdditionalItemsReady(items, restore)
}

// ExecuteContext forwards to the adapted action's ExecuteContext when it has one.
func (a v1Adapter) ExecuteContext(ctx context.Context, in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	if ca, ok := a.RestoreItemAction.(interface {
		ExecuteContext(context.Context, *ria.ExecuteInput) (*ria.ExecuteOutput, error)
	}); ok {
		return ca.ExecuteContext(ctx, in)
	}
	return a.Execute(in)
}

// AreAdditionalItemsReadyContext: a v1 action's additional items are ready at once.
func (a v1Adapter) AreAdditionalItemsReadyContext(context.Context, []ria.ResourceIdentifier, *ria.Restore) (bool, error) {
	return true, nil
}

// AsyncAction is a version 2 action whose Execute may start an operation that goes on
// after it returns, named by ExecuteOutput.OperationID, as Velero's v2 actions do. The
// restore polls Progress until the operation completes; its item is ready, and its
// dependents start, only then. It calls Cancel when the operation outlasts the restore's
// item operation timeout, and when the restore is cancelled. A restore resumed from its
// journal polls the operations recorded there: Execute is not called again.
type AsyncAction interface {
	Progress(ctx context.Context, operationID string, restore *ria.Restore) (OperationProgress, error)
	Cancel(ctx context.Context, operationID string, restore *ria.Restore) error
}

// OperationProgress is what Progress says of an operation, as Velero's.
type OperationProgress struct {
	// Completed: the operation has ended, successfully unless Err says otherwise.
	Completed bool
	Err       string
	// NCompleted of NTotal OperationUnits are done; Description says what is being done.
	NCompleted, NTotal int64
	OperationUnits     string
	Description        string
	Started, Updated   time.Time
}
