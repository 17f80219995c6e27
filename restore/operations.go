package restore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/restoregraph/restoregraph/plugin"
	riav2 "github.com/restoregraph/restoregraph/plugin/restoreitemaction/v2"
	"github.com/restoregraph/restoregraph/scheduler"
)

// OperationPhase is where an asynchronous operation stands, in Velero's words.
type OperationPhase string

const (
	OperationInProgress OperationPhase = "InProgress"
	OperationCompleted  OperationPhase = "Completed"
	OperationFailed     OperationPhase = "Failed"
	OperationCanceled   OperationPhase = "Canceled"
)

// Operation is an asynchronous operation a plugin's Execute started on an object
// (riav2.AsyncAction): which plugin, its ID, when it started and how it stands. The
// report lists an object's operations, and the journal records them, so that a resumed
// restore polls them again rather than starting them again.
type Operation struct {
	Plugin  string         `json:"plugin"`
	ID      string         `json:"id"`
	Started time.Time      `json:"started"`
	Phase   OperationPhase `json:"phase"`
	// Ended is when it was seen completed, failed, cancelled or timed out.
	Ended time.Time `json:"ended,omitzero"`
	// Err is what the plugin said when it failed, or why it was cancelled.
	Err string `json:"error,omitempty"`
	// Progress is the last Progress the plugin gave: "3/10 GB: copying".
	Progress string `json:"progress,omitempty"`
}

// ErrOperationTimeout is wrapped by the *OperationError of an operation that outlasted
// RunOptions.ItemOperationTimeout; it was cancelled.
var ErrOperationTimeout = errors.New("it outlasted the item operation timeout and was cancelled")

// OperationError fails an object whose asynchronous operation failed, timed out or was
// cancelled.
type OperationError struct {
	Plugin, ID string
	Err        error
}

func (e *OperationError) Error() string {
	return fmt.Sprintf("plugin %s: operation %s: %v", e.Plugin, e.ID, e.Err)
}

func (e *OperationError) Unwrap() error { return e.Err }

// started records the operation a's Execute returned for o. In a dry run (Verify) it is
// cancelled at once: Verify writes nothing and waits for nothing.
func (r *run) started(ctx context.Context, o *Object, a *plugin.Action, id string) error {
	async, ok := a.RestoreItemAction.(riav2.AsyncAction)
	if !ok {
		return &PluginError{Plugin: a.Name, Err: fmt.Errorf("Execute returned operation %q, but the plugin has no Progress to follow it with", id)}
	}
	if o.DryRun {
		if err := contained(func() error { return async.Cancel(ctx, id, r.request) }); err != nil {
			return &OperationError{Plugin: a.Name, ID: id, Err: fmt.Errorf("cancelling it after a dry run: %w", err)}
		}
		return nil
	}
	o.ops = append(o.ops, Operation{Plugin: a.Name, ID: id, Started: r.opts.Clock.Now(), Phase: OperationInProgress})
	return nil
}

// stepOperations waits until every operation the plugins started on o has completed,
// polling each plugin's Progress with RunOptions.OperationPoll. One that fails, or
// outlasts RunOptions.ItemOperationTimeout (it is then cancelled), fails o; so does the
// restore being cancelled, which cancels the operations under way. The journal records
// how they ended.
func (r *run) stepOperations(ctx context.Context, o *Object) error {
	if len(o.ops) == 0 {
		return nil
	}
	defer func() { o.Result.Operations = slices.Clone(o.ops) }()
	var failed error
	for i := range o.ops {
		if o.ops[i].Phase == OperationInProgress {
			if err := r.follow(ctx, &o.ops[i]); err != nil && failed == nil {
				failed = err
			}
		}
	}
	if failed != nil {
		return failed
	}
	return r.journal(o, o.Result.NewUID)
}

// follow polls op until it ends, and cancels it when it times out or ctx is done.
func (r *run) follow(ctx context.Context, op *Operation) error {
	async, err := r.async(op.Plugin)
	if err != nil {
		op.Phase, op.Err = OperationFailed, err.Error()
		return &OperationError{Plugin: op.Plugin, ID: op.ID, Err: err}
	}
	clk := r.opts.Clock
	deadline := op.Started.Add(r.opts.ItemOperationTimeout)
	poll := r.opts.OperationPoll
	end := func(phase OperationPhase, err error) error {
		op.Phase, op.Ended = phase, clk.Now()
		if err != nil {
			op.Err = err.Error()
			return &OperationError{Plugin: op.Plugin, ID: op.ID, Err: err}
		}
		return nil
	}
	cancel := func(why error) error {
		if err := r.cancelOperation(ctx, async, op.ID); err != nil {
			why = fmt.Errorf("%w (and Cancel failed: %v)", why, err)
		}
		return end(OperationCanceled, why)
	}
	for {
		var p riav2.OperationProgress
		err := contained(func() (err error) {
			p, err = async.Progress(ctx, op.ID, r.request)
			return err
		})
		switch {
		case stopped(ctx):
			return cancel(fmt.Errorf("the restore stopped: %w", context.Cause(ctx)))
		case err != nil:
			return end(OperationFailed, fmt.Errorf("Progress: %w", err))
		case p.Completed && p.Err != "":
			return end(OperationFailed, errors.New(p.Err))
		case p.Completed:
			op.Progress = progressText(p)
			return end(OperationCompleted, nil)
		}
		op.Progress = progressText(p)
		left := deadline.Sub(clk.Now())
		if left <= 0 {
			return cancel(ErrOperationTimeout)
		}
		t := clk.NewTimer(min(poll.Step(), left))
		select {
		case <-ctx.Done():
			t.Stop()
			return cancel(fmt.Errorf("the restore stopped: %w", context.Cause(ctx)))
		case <-t.C():
		}
	}
}

// abandon cancels the operations under way on o, which failed before they were
// followed to their end (its creation failed, or the restore stopped first): none is
// left running for an object the restore gave up on.
func (r *run) abandon(ctx context.Context, o *Object, why error) {
	pending := false
	for i := range o.ops {
		op := &o.ops[i]
		if op.Phase != OperationInProgress {
			continue
		}
		pending = true
		op.Phase, op.Ended, op.Err = OperationCanceled, r.opts.Clock.Now(), "its object failed: "+why.Error()
		async, err := r.async(op.Plugin)
		if err == nil {
			err = r.cancelOperation(ctx, async, op.ID)
		}
		if err != nil {
			op.Err += " (and Cancel failed: " + err.Error() + ")"
		}
	}
	if pending {
		o.Result.Operations = slices.Clone(o.ops)
	}
}

// stopped reports whether ctx is done. A call that fails at ctx's deadline can return
// before ctx's own timer has fired: a gRPC server enforces the deadline it was sent and
// may answer DeadlineExceeded first. Past the deadline, stopped waits the moment until
// ctx is done, so that the failure is the restore stopping, not the call failing.
func stopped(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		<-ctx.Done()
		return true
	}
	return false
}

// cancelOperation calls the plugin's Cancel. The restore's context may be done: the
// call gets a minute of its own.
func (r *run) cancelOperation(ctx context.Context, async riav2.AsyncAction, id string) error {
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer stop()
	return contained(func() error { return async.Cancel(cctx, id, r.request) })
}

// contained makes a call into a plugin, and returns a panic in it as the call's error (a
// *scheduler.PanicError): a plugin's fault fails its object alone, as the crash of one of
// Velero's plugin processes does. A panic anywhere else in a step stops the restore.
func contained(call func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = scheduler.Recovered(v)
		}
	}()
	return call()
}

// async returns the plugin named, as the AsyncAction that started an operation.
func (r *run) async(name string) (riav2.AsyncAction, error) {
	for _, a := range r.actions {
		if a.Name == name {
			if async, ok := a.RestoreItemAction.(riav2.AsyncAction); ok {
				return async, nil
			}
			return nil, fmt.Errorf("plugin %s has no Progress to follow the operation with", name)
		}
	}
	return nil, fmt.Errorf("plugin %s, which started the operation, is not in this restore", name)
}

func progressText(p riav2.OperationProgress) string {
	var s string
	if p.NTotal > 0 {
		s = fmt.Sprintf("%d/%d", p.NCompleted, p.NTotal)
		if p.OperationUnits != "" {
			s += " " + p.OperationUnits
		}
	}
	if p.Description != "" {
		if s != "" {
			s += ": "
		}
		s += p.Description
	}
	return s
}
