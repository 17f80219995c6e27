package readiness

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	v2 "github.com/restoregraph/restoregraph/plugin/restoreitemaction/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
)

// waitingPlugin is a v2 plugin whose additional items become ready after readyAfter
// calls (never when negative), or whose check fails with err.
type waitingPlugin struct {
	readyAfter int32
	calls      atomic.Int32
	err        error
}

func (p *waitingPlugin) AppliesTo() (ria.ResourceSelector, error) { return ria.ResourceSelector{}, nil }
func (p *waitingPlugin) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	out := ria.NewExecuteOutput(in.Item).WithItemsWait()
	out.AdditionalItems = []ria.ResourceIdentifier{{GroupResource: schema.GroupResource{Resource: "secrets"}, Namespace: "n", Name: "creds"}}
	return out, nil
}
func (p *waitingPlugin) AreAdditionalItemsReady([]ria.ResourceIdentifier, *ria.Restore) (bool, error) {
	n := p.calls.Add(1)
	if p.err != nil {
		return false, p.err
	}
	return p.readyAfter >= 0 && n > p.readyAfter, nil
}

var _ v2.RestoreItemAction = (*waitingPlugin)(nil)

type v1Plugin struct{}

func (v1Plugin) AppliesTo() (ria.ResourceSelector, error) { return ria.ResourceSelector{}, nil }
func (v1Plugin) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	return ria.NewExecuteOutput(in.Item), nil
}

// drive steps the fake clock whenever the waiter sleeps, until it returns.
func drive[T any](clk *clocktesting.FakeClock, step time.Duration, done chan T) T {
	for {
		select {
		case v := <-done:
			return v
		default:
			if clk.HasWaiters() {
				clk.Step(step)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
}

type waitOutcome struct{ recorded, fail error }

func runWait(a AdditionalItemsWaiter, p v2.RestoreItemAction, pluginTimeout time.Duration, ctx context.Context) waitOutcome {
	done := make(chan waitOutcome, 1)
	go func() {
		r, f := a.Wait(ctx, "test", p, nil, &ria.Restore{Name: "r"}, pluginTimeout)
		done <- waitOutcome{r, f}
	}()
	return drive(a.Clock.(*clocktesting.FakeClock), time.Second, done)
}

func TestAdditionalItems(t *testing.T) {
	clk := func() *clocktesting.FakeClock { return clocktesting.NewFakeClock(time.Unix(0, 0)) }
	ctx := context.Background()

	t.Run("ready after a while", func(t *testing.T) {
		p := &waitingPlugin{readyAfter: 3}
		o := runWait(AdditionalItemsWaiter{Clock: clk()}, p, 0, ctx)
		assert.NoError(t, o.recorded)
		assert.NoError(t, o.fail)
		assert.EqualValues(t, 4, p.calls.Load())
	})
	t.Run("never ready: recorded, the item goes on", func(t *testing.T) {
		o := runWait(AdditionalItemsWaiter{Clock: clk()}, &waitingPlugin{readyAfter: -1}, 0, ctx)
		assert.NoError(t, o.fail)
		var ae *AdditionalItemsError
		require.ErrorAs(t, o.recorded, &ae)
		assert.Equal(t, DefaultAdditionalItemsTimeout, ae.Timeout)
		assert.ErrorIs(t, o.recorded, ErrAdditionalItemsNotReady)
	})
	t.Run("never ready, strict: the item fails", func(t *testing.T) {
		o := runWait(AdditionalItemsWaiter{Clock: clk(), Strict: true, Default: time.Minute}, &waitingPlugin{readyAfter: -1}, 0, ctx)
		assert.NoError(t, o.recorded)
		var ae *AdditionalItemsError
		require.ErrorAs(t, o.fail, &ae)
		assert.Equal(t, time.Minute, ae.Timeout, "the caller's default")
	})
	t.Run("the plugin's own timeout wins", func(t *testing.T) {
		o := runWait(AdditionalItemsWaiter{Clock: clk(), Default: time.Hour}, &waitingPlugin{readyAfter: -1}, 30*time.Second, ctx)
		var ae *AdditionalItemsError
		require.ErrorAs(t, o.recorded, &ae)
		assert.Equal(t, 30*time.Second, ae.Timeout)
	})
	t.Run("plugin error", func(t *testing.T) {
		boom := errors.New("boom")
		o := runWait(AdditionalItemsWaiter{Clock: clk()}, &waitingPlugin{err: boom}, 0, ctx)
		assert.ErrorIs(t, o.recorded, boom)
		o = runWait(AdditionalItemsWaiter{Clock: clk(), Strict: true}, &waitingPlugin{err: boom}, 0, ctx)
		assert.ErrorIs(t, o.fail, boom)
	})
	t.Run("a v1 plugin through v2 is ready at once", func(t *testing.T) {
		o := runWait(AdditionalItemsWaiter{Clock: clk()}, v2.AdaptV1(v1Plugin{}), 0, ctx)
		assert.NoError(t, o.recorded)
		assert.NoError(t, o.fail)
	})
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		o := runWait(AdditionalItemsWaiter{Clock: clk()}, &waitingPlugin{readyAfter: -1}, 0, cctx)
		assert.ErrorIs(t, o.fail, context.Canceled)
	})
}
