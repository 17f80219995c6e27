package restore

import (
	"context"
	"errors"
	"fmt"

	"github.com/restoregraph/restoregraph/hook"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// HookResult is how one exec hook of a Pod ended: where it came from (the spec's
// resource name, or "<annotations>"), the container, and its error. The command and what
// it wrote are not kept: they may hold secrets.
type HookResult struct {
	Source    string `json:"source"`
	Container string `json:"container"`
	Err       string `json:"error,omitempty"`
}

// HookError fails a Pod whose exec hook failed with onError Fail, or could not run.
type HookError struct {
	Source, Container string
	Err               error
}

func (e *HookError) Error() string {
	if e.Container == "" { // its annotations could not be read
		return fmt.Sprintf("exec hook %s: %v", e.Source, e.Err)
	}
	return fmt.Sprintf("exec hook %s in container %s: %v", e.Source, e.Container, e.Err)
}

func (e *HookError) Unwrap() error { return e.Err }

// ErrContainerNotUp is wrapped by a HookError whose container was not running (or ready,
// as the hook asked) within its wait timeout.
var ErrContainerNotUp = errors.New("the container did not come up in time")

// stepInitHooks puts the init containers of the Pod's hooks before its own.
func (r *run) stepInitHooks(_ context.Context, o *Object) error {
	if o.Item.GroupResource() != podsResource {
		return nil
	}
	add := r.sel.Hooks.InitContainers(o.Body, o.Body.GetNamespace())
	if len(add) == 0 {
		return nil
	}
	o.own()
	own, _, _ := unstructured.NestedSlice(o.Body.Object, "spec", "initContainers")
	all := make([]any, 0, len(add)+len(own))
	for _, c := range add {
		all = append(all, c.Hook)
	}
	return unstructured.SetNestedSlice(o.Body.Object, append(all, own...), "spec", "initContainers")
}

// stepExecHooks runs the Pod's exec hooks once each one's container is running (or
// ready), in order, through the target's Executor. A hook that fails with onError Fail,
// or whose container does not come up, fails the Pod; with Continue it is a warning and
// the next hooks run. The journal records that they ran: a resumed restore does not run
// them again.
func (r *run) stepExecHooks(ctx context.Context, o *Object) error {
	if o.Item.GroupResource() != podsResource || o.hooksRan || o.Result.Status != Restored {
		return nil
	}
	execs, err := r.sel.Hooks.Execs(o.Target, o.Target.GetNamespace())
	if err != nil {
		return &HookError{Source: "<annotations>", Err: err}
	}
	if len(execs) == 0 {
		return nil
	}
	for _, e := range execs {
		res := HookResult{Source: e.Source, Container: e.Hook.Container}
		err := r.runHook(ctx, o, e.Hook)
		if err != nil {
			res.Err = err.Error()
		}
		o.Result.Hooks = append(o.Result.Hooks, res)
		switch {
		case err == nil:
		case e.Hook.OnError == hook.Fail || ctx.Err() != nil:
			return &HookError{Source: e.Source, Container: e.Hook.Container, Err: err}
		default:
			o.Result.Warnings = append(o.Result.Warnings, fmt.Sprintf("exec hook %s in container %s: %v (onError Continue)", e.Source, e.Hook.Container, err))
		}
	}
	o.hooksRan = true
	return r.journal(o, o.Result.NewUID)
}

// runHook waits for the hook's container and runs its command.
func (r *run) runHook(ctx context.Context, o *Object, e hook.Exec) error {
	exec := r.target.Exec
	if exec == nil {
		return errors.New("the target has no executor (restore.Target.Exec) to run it with")
	}
	wait := func(ctx context.Context) error { return r.waitContainer(ctx, o, e) }
	var err error
	if e.WaitTimeout > 0 {
		wctx, cancel := context.WithTimeoutCause(ctx, e.WaitTimeout, ErrContainerNotUp)
		err = wait(wctx)
		cancel()
	} else {
		err = o.budget.run(ctx, wait)
	}
	if err != nil {
		return err
	}
	timeout := e.ExecTimeout
	if timeout <= 0 {
		timeout = hook.DefaultExecTimeout
	}
	ectx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, _, err := exec.Exec(ectx, o.Target.GetNamespace(), o.Target.GetName(), e.Container, e.Command); err != nil {
		if ectx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("it ran longer than its %s: %w", timeout, err)
		}
		return err
	}
	return nil
}

// waitContainer polls the Pod until the hook's container is running, or ready when the
// hook waits for it, as Velero judges it.
func (r *run) waitContainer(ctx context.Context, o *Object, e hook.Exec) error {
	poll := r.opts.OperationPoll
	for {
		pod, err := o.Client.Get(ctx, o.Target.GetName(), metav1.GetOptions{})
		if err == nil && containerUp(pod, e.Container, e.WaitForReady) {
			return nil
		}
		if err != nil && ctx.Err() == nil && !transient(err) {
			return err
		}
		t := r.opts.Clock.NewTimer(poll.Step())
		select {
		case <-ctx.Done():
			t.Stop()
			if cause := context.Cause(ctx); errors.Is(cause, ErrContainerNotUp) || errors.Is(cause, ErrItemTimeout) {
				state := "running"
				if e.WaitForReady {
					state = "ready"
				}
				return fmt.Errorf("%w: container %s not %s", ErrContainerNotUp, e.Container, state)
			}
			return context.Cause(ctx)
		case <-t.C():
		}
	}
}

func containerUp(pod *unstructured.Unstructured, container string, ready bool) bool {
	statuses, _, _ := unstructured.NestedSlice(pod.Object, "status", "containerStatuses")
	for _, s := range statuses {
		cs, _ := s.(map[string]any)
		if cs["name"] != container {
			continue
		}
		if ready {
			r, _ := cs["ready"].(bool)
			return r
		}
		_, running, _ := unstructured.NestedMap(cs, "state", "running")
		return running
	}
	return false
}
