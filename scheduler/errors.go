package scheduler

import (
	"errors"
	"fmt"
	"runtime/debug"
)

var (
	// ErrCycle is the error of a node on or behind a cycle of the DAG: it never starts.
	ErrCycle = errors.New("node is on or behind a dependency cycle")
	// ErrDependencyFailed is wrapped by the error of a Skipped node, and by Await's when
	// an awaited node did not succeed.
	ErrDependencyFailed = errors.New("a dependency did not succeed")
)

// CycleError is returned by Await when the awaited node cannot finish before the
// awaiting one.
type CycleError struct {
	Node, Awaited int64
}

func (e *CycleError) Error() string {
	return fmt.Sprintf("node %d cannot await node %d: it depends on node %d already", e.Node, e.Awaited, e.Node)
}

// Is makes errors.Is(err, ErrCycle) true for a *CycleError.
func (e *CycleError) Is(target error) bool { return target == ErrCycle }

// PanicError is the failure of a node whose function panicked.
type PanicError struct {
	Value any
	Stack []byte
}

func newPanicError(v any) *PanicError { return &PanicError{Value: v, Stack: debug.Stack()} }

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack) }
