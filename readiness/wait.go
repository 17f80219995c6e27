package readiness

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/clock"
)

// ErrNotReady is wrapped by every *NotReadyError.
var ErrNotReady = errors.New("object not ready")

// NotReadyError says an object did not become ready: the wait timed out, or the probe
// said it failed. Last is the probe's last word.
type NotReadyError struct {
	Object  string
	Timeout time.Duration // zero when the probe said Failed
	Last    Result
}

func (e *NotReadyError) Error() string {
	if e.Timeout > 0 {
		return fmt.Sprintf("%s not ready after %s: %s", e.Object, e.Timeout, e.Last.Reason)
	}
	return fmt.Sprintf("%s failed: %s", e.Object, e.Last.Reason)
}

func (e *NotReadyError) Unwrap() error { return ErrNotReady }

// Waiter waits for objects to become ready.
type Waiter struct {
	Client   dynamic.Interface
	Registry *Registry
	Clock    clock.Clock // default: the real clock
	// Backoff spaces polls when the cluster cannot watch; default 100ms doubling to 5s.
	Backoff wait.Backoff
}

func (w *Waiter) clock() clock.Clock {
	if w.Clock == nil {
		return clock.RealClock{}
	}
	return w.Clock
}

// Wait returns once the object is ready, with the probe's result. It fails with a
// *NotReadyError after timeout (none when zero) or when the probe says the object
// failed, and with ctx's error when ctx is done first.
func (w *Waiter) Wait(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, timeout time.Duration) (Result, error) {
	c := w.clock()
	var deadline <-chan time.Time
	if timeout > 0 {
		t := c.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C()
	}
	client := w.Client.Resource(gvr).Namespace(namespace)
	object := gvr.GroupResource().String() + " " + name
	if namespace != "" {
		object = gvr.GroupResource().String() + " " + namespace + "/" + name
	}
	backoff := w.Backoff
	if backoff.Duration == 0 {
		backoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Cap: 5 * time.Second, Steps: 1 << 30}
	}
	last := Result{Reason: "not checked yet"}
	canWatch := true
	for {
		obj, err := client.Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			last = w.Registry.Check(obj)
		case apierrors.IsNotFound(err):
			last = Result{Reason: "not found"}
		case ctx.Err() != nil:
			return last, ctx.Err()
		default:
			last = Result{Reason: "get: " + err.Error()}
		}
		if last.Ready {
			return last, nil
		}
		if last.Failed {
			return last, &NotReadyError{Object: object, Last: last}
		}
		if canWatch && obj != nil {
			res, done, err := w.watch(ctx, client, obj, deadline)
			if res != nil {
				last = *res
			}
			switch {
			case done && last.Ready:
				return last, nil
			case done && last.Failed:
				return last, &NotReadyError{Object: object, Last: last}
			case errors.Is(err, errDeadline):
				return last, &NotReadyError{Object: object, Timeout: timeout, Last: last}
			case ctx.Err() != nil:
				return last, ctx.Err()
			case err != nil:
				canWatch = false // poll from now on
			}
			continue // the watch ended: get again and watch anew
		}
		t := c.NewTimer(backoff.Step())
		select {
		case <-ctx.Done():
			t.Stop()
			return last, ctx.Err()
		case <-deadline:
			t.Stop()
			return last, &NotReadyError{Object: object, Timeout: timeout, Last: last}
		case <-t.C():
		}
	}
}

var errDeadline = errors.New("deadline")

// watch follows the object from the version read until it is ready or failed (done),
// the deadline passes (errDeadline), or the watch ends (nil) or cannot start (error).
func (w *Waiter) watch(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured, deadline <-chan time.Time) (*Result, bool, error) {
	wi, err := client.Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", obj.GetName()).String(),
		ResourceVersion: obj.GetResourceVersion(),
	})
	if err != nil {
		return nil, false, err
	}
	// The deadline comes from the waiter's clock, not ctx's: make it cancel the watch.
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-deadline:
			cancel(errDeadline)
		case <-wctx.Done():
		}
	}()
	var last *Result
	_, err = watchtools.UntilWithoutRetry(wctx, wi, func(ev watch.Event) (bool, error) {
		switch ev.Type {
		case watch.Added, watch.Modified:
			u, isU := ev.Object.(*unstructured.Unstructured)
			if !isU || u.GetName() != obj.GetName() {
				return false, nil
			}
			r := w.Registry.Check(u)
			last = &r
			return r.Ready || r.Failed, nil
		case watch.Deleted:
			last = &Result{Reason: "deleted"}
		case watch.Error:
			return false, errWatchEnded // e.g. the version expired: get and watch again
		}
		return false, nil
	})
	switch {
	case err == nil:
		return last, true, nil
	case errors.Is(err, watchtools.ErrWatchClosed), errors.Is(err, errWatchEnded):
		return last, false, nil
	case errors.Is(context.Cause(wctx), errDeadline):
		return last, false, errDeadline
	case ctx.Err() != nil:
		return last, false, ctx.Err()
	}
	return last, false, err
}

var errWatchEnded = errors.New("watch ended with an error event")
