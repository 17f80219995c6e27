package scheduler

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
)

var (
	// ErrCycle is the error of a node on or behind a cycle of the DAG: it never starts.
	ErrCycle = errors.New("node is on or behind a dependency cycle")
	// ErrDependencyFailed is wrapped by the error of a Skipped node, and by Await's when
	// an awaited node did not succeed.
	ErrDependencyFailed = errors.New("a dependency did not succeed")
)

// AwaitError is Await's error when an awaited node did not succeed: which node, and how
// it ended. It wraps ErrDependencyFailed.
type AwaitError struct {
	Node   int64
	Status Status
}

func (e *AwaitError) Error() string {
	return fmt.Sprintf("%v: awaited node %d %s", ErrDependencyFailed, e.Node, e.Status)
}

// Unwrap returns ErrDependencyFailed.
func (e *AwaitError) Unwrap() error { return ErrDependencyFailed }

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

// TiesError is Run's error when Options.Ties is not a permutation of the DAG's nodes.
type TiesError struct {
	Len, Nodes int   // Ties' length and the DAG's
	Node       int32 // the first node out of range or given twice, when Len == Nodes
	Twice      bool  // Node is given twice, not out of range
}

func (e *TiesError) Error() string {
	switch {
	case e.Len != e.Nodes:
		return fmt.Sprintf("scheduler: Options.Ties orders %d nodes, the DAG has %d", e.Len, e.Nodes)
	case e.Twice:
		return fmt.Sprintf("scheduler: Options.Ties gives node %d twice", e.Node)
	}
	return fmt.Sprintf("scheduler: Options.Ties gives node %d, not in the DAG of %d", e.Node, e.Nodes)
}

// checkTies returns a *TiesError when ties is not a permutation of n nodes.
func checkTies(ties []int32, n int) error {
	if len(ties) != n {
		return &TiesError{Len: len(ties), Nodes: n}
	}
	seen := make([]bool, n)
	for _, v := range ties {
		if v < 0 || int(v) >= n {
			return &TiesError{Len: n, Nodes: n, Node: v}
		}
		if seen[v] {
			return &TiesError{Len: n, Nodes: n, Node: v, Twice: true}
		}
		seen[v] = true
	}
	return nil
}

// PanicError is the failure of a node whose function panicked: what it panicked with,
// the function and line that panicked, and the whole stack.
type PanicError struct {
	Value any
	Where string // "package.Function (file.go:123)"
	Stack []byte

	recovered bool // by the scheduler, from a node function: not a caller's own
}

// Recovered is the *PanicError of v, which the calling deferred function has just
// recovered. A node function that contains a panic itself (a plugin's call, say) returns
// it as an ordinary failure of its node; the run goes on.
func Recovered(v any) *PanicError { return newPanicError(v) }

// newPanicError is called by the deferred function that recovered v.
func newPanicError(v any) *PanicError {
	return &PanicError{Value: v, Where: panicked(), Stack: debug.Stack()}
}

// Error says what panicked and where, on one line: a report shows it beside the node.
// The stack is in Stack.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v (in %s)", e.Value, e.Where) }

// panicked finds the frame that called panic, from the deferred function recovering
// it: the first one past runtime.gopanic that is not the runtime's own (a nil map write
// or an index out of range panics from inside it).
func panicked() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	past := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			past = true
		case past && !strings.HasPrefix(f.Function, "runtime."):
			return fmt.Sprintf("%s (%s:%d)", f.Function, filepath.Base(f.File), f.Line)
		}
		if !more {
			return "unknown"
		}
	}
}
