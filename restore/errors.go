package restore

import (
	"errors"

	"k8s.io/apimachinery/pkg/types"
)

// The errors of one object's outcome (ObjectResult.Err) are typed, so that a caller
// tells them apart with errors.Is and errors.As:
//
//   - ErrItemTimeout: its own work took longer than RunOptions.ItemTimeout.
//   - The API server's refusals are its *apierrors.StatusError, wrapped:
//     apierrors.IsForbidden, IsInvalid (the field causes in its Status().Details),
//     IsConflict, IsAlreadyExists (with the Fail policy) and the rest apply as they do
//     to client-go's own errors.
//   - *PluginError: a restore item action failed, named; *readiness.AdditionalItemsError:
//     what it asked to wait for was not ready in time, in strict mode.
//   - *BlockedError (errors.Is ErrBlocked): skipped, because an object it depends on
//     failed or it is on a dependency cycle.
//   - ErrNotServed: the target serves no version of its group-resource.
//   - *StepError: every failure in the pipeline says which step it was in.
//   - context.Canceled and the like: the restore stopped before the object started
//     (Cancelled).
var (
	// ErrBlocked is matched by every *BlockedError.
	ErrBlocked = errors.New("blocked by a dependency")
	// ErrNotServed: the target serves no version of the object's group-resource, and no
	// CRD in the backup provides it.
	ErrNotServed = errors.New("not served by the target")
)

// StepError is an object's failure in one step of its pipeline. Its message is the
// failure's own.
type StepError struct {
	Step StepName // StepCreate, StepReady, ... or a caller's step's name
	Err  error
}

func (e *StepError) Error() string { return e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// PluginError is a restore item action's failure: its Execute failed or hung, or what it
// asked to wait for did not come.
type PluginError struct {
	Plugin string
	Err    error
}

func (e *PluginError) Error() string { return "plugin " + e.Plugin + ": " + e.Err.Error() }
func (e *PluginError) Unwrap() error { return e.Err }

// BlockedError is why an object was skipped without being tried: By failed (or was
// itself skipped), and Chain leads from it to this object, by source UID. On a cycle,
// Cycle is set and By and Chain are empty.
type BlockedError struct {
	By    types.UID
	Chain []types.UID
	Cycle bool
	Err   error // the scheduler's account of it
}

func (e *BlockedError) Error() string {
	if e.Cycle {
		return "on or behind a dependency cycle"
	}
	return e.Err.Error()
}
func (e *BlockedError) Unwrap() error        { return e.Err }
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }
