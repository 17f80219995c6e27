package readiness

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

var widgets = schema.GroupVersionResource{Group: "x.io", Version: "v1", Resource: "widgets"}

func widget(ready string) *unstructured.Unstructured {
	u := obj("x.io/v1", "Widget", nil)
	if ready != "" {
		u.Object["status"] = conds("Ready", ready)
	}
	return u
}

type harness struct {
	client *dynamicfake.FakeDynamicClient
	clock  *clocktesting.FakeClock
	waiter *Waiter
}

func newHarness(objs ...runtime.Object) *harness {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{widgets: "WidgetList"}, objs...)
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	return &harness{client: client, clock: clk, waiter: &Waiter{Client: client, Registry: NewRegistry(RequireSignal), Clock: clk}}
}

type outcome struct {
	res Result
	err error
}

func (h *harness) start(ctx context.Context, timeout time.Duration) chan outcome {
	done := make(chan outcome, 1)
	go func() {
		res, err := h.waiter.Wait(ctx, widgets, "n", "x", timeout)
		done <- outcome{res, err}
	}()
	return done
}

// waitFor spins until cond holds; the code under test runs on real goroutines, only its
// clock is fake.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 5*time.Second, time.Millisecond)
}

func (h *harness) watching() bool {
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "watch" {
			return true
		}
	}
	return false
}

func TestWaitReadyAtOnce(t *testing.T) {
	h := newHarness(widget("True"))
	res, err := h.waiter.Wait(context.Background(), widgets, "n", "x", time.Minute)
	require.NoError(t, err)
	assert.True(t, res.Ready)
}

func TestWaitReadyLaterThroughWatch(t *testing.T) {
	h := newHarness(widget("False"))
	done := h.start(context.Background(), time.Minute)
	waitFor(t, h.watching)
	_, err := h.client.Resource(widgets).Namespace("n").Update(context.Background(), widget("True"), metav1.UpdateOptions{})
	require.NoError(t, err)
	o := <-done
	require.NoError(t, o.err)
	assert.True(t, o.res.Ready)
}

func TestWaitNeverReadyTimesOut(t *testing.T) {
	h := newHarness(widget("False"))
	done := h.start(context.Background(), time.Minute)
	waitFor(t, func() bool { return h.watching() && h.clock.HasWaiters() })
	h.clock.Step(time.Minute)
	o := <-done
	var nr *NotReadyError
	require.ErrorAs(t, o.err, &nr)
	assert.Equal(t, time.Minute, nr.Timeout)
	assert.Contains(t, nr.Error(), `Ready is "False"`)
	assert.ErrorIs(t, o.err, ErrNotReady)
}

func TestWaitFailedObject(t *testing.T) {
	ns := obj("v1", "Namespace", map[string]any{"status": map[string]any{"phase": "Terminating"}})
	ns.SetNamespace("")
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), ns)
	w := &Waiter{Client: client, Registry: NewRegistry(""), Clock: clocktesting.NewFakeClock(time.Unix(0, 0))}
	_, err := w.Wait(context.Background(), schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", "x", time.Minute)
	var nr *NotReadyError
	require.ErrorAs(t, err, &nr)
	assert.Zero(t, nr.Timeout, "failed, not timed out")
	assert.True(t, nr.Last.Failed)
}

func TestWaitCancelled(t *testing.T) {
	h := newHarness(widget("False"))
	ctx, cancel := context.WithCancel(context.Background())
	done := h.start(ctx, 0)
	waitFor(t, h.watching)
	cancel()
	assert.ErrorIs(t, (<-done).err, context.Canceled)
}

func TestWaitPollsWhenWatchIsUnsupported(t *testing.T) {
	h := newHarness(widget("False"))
	var gets atomic.Int32
	h.client.PrependWatchReactor("*", func(clienttesting.Action) (bool, watch.Interface, error) {
		return true, nil, errors.New("the server does not allow this method on the requested resource")
	})
	h.client.PrependReactor("get", "widgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		gets.Add(1)
		return false, nil, nil
	})
	done := h.start(context.Background(), time.Minute)
	waitFor(t, func() bool { return gets.Load() >= 2 && h.clock.HasWaiters() }) // a poll after the failed watch
	_, err := h.client.Resource(widgets).Namespace("n").Update(context.Background(), widget("True"), metav1.UpdateOptions{})
	require.NoError(t, err)
	h.clock.Step(5 * time.Second)
	o := <-done
	require.NoError(t, o.err)
	assert.True(t, o.res.Ready)
}

func TestWaitNotFoundThenCreated(t *testing.T) {
	h := newHarness()
	h.client.PrependWatchReactor("*", func(clienttesting.Action) (bool, watch.Interface, error) {
		return true, nil, errors.New("no watch")
	})
	done := h.start(context.Background(), time.Minute)
	waitFor(t, h.clock.HasWaiters)
	_, err := h.client.Resource(widgets).Namespace("n").Create(context.Background(), widget("True"), metav1.CreateOptions{})
	require.NoError(t, err)
	for len(done) == 0 {
		h.clock.Step(time.Second)
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, (<-done).err)
}
