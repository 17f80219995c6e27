package restore

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// An object's runs share one context while nothing may have cancelled it; one its alarm
// fired on, or whose parent was cancelled, is not given to another run; a run within a
// run has its own; and the shared one ends when the object's work does.
func TestBudgetRunsShareOneContextTillItEnds(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	b := &budget{clock: clock.RealClock{}, total: time.Minute}
	var seen []context.Context
	record := func(ctx context.Context) error {
		seen = append(seen, ctx)
		return ctx.Err()
	}
	for range 3 {
		require.NoError(t, b.run(parent, record))
		assert.NoError(t, seen[len(seen)-1].Err(), "live between runs")
	}
	assert.Same(t, seen[0], seen[1])
	assert.Same(t, seen[0], seen[2])

	other, cancelOther := context.WithCancel(context.Background())
	require.NoError(t, b.run(other, record))
	assert.NotSame(t, seen[0], seen[3], "a run given another context")
	assert.ErrorIs(t, seen[0].Err(), context.Canceled, "the first context let go")
	cancelOther()
	assert.ErrorIs(t, b.run(other, record), context.Canceled)
	require.NoError(t, b.run(parent, record))
	assert.NoError(t, seen[5].Err(), "a new context after a cancelled one")

	// A run within a run has a context of its own, which ends with it.
	var inner context.Context
	require.NoError(t, b.run(parent, func(ctx context.Context) error {
		require.NoError(t, b.run(ctx, func(ctx context.Context) error {
			inner = ctx
			return nil
		}))
		assert.NotSame(t, ctx, inner)
		assert.ErrorIs(t, inner.Err(), context.Canceled)
		return ctx.Err()
	}))
	assert.NoError(t, seen[5].Err(), "the outer run's context used again")

	b.close()
	assert.ErrorIs(t, seen[5].Err(), context.Canceled, "closed with the object")

	// A run its alarm fired on: the next run is not given that context, and times out
	// on its own budget, which is spent.
	clk := clocktesting.NewFakeClock(time.Now())
	b = &budget{clock: clk, total: time.Minute}
	fired := b.run(parent, func(ctx context.Context) error {
		seen = append(seen, ctx)
		clk.Step(2 * time.Minute)
		<-ctx.Done()
		return ctx.Err()
	})
	assert.ErrorIs(t, fired, ErrItemTimeout)
	assert.Nil(t, b.ctx, "not used again")
	next := b.run(parent, func(ctx context.Context) error {
		assert.NotSame(t, seen[len(seen)-1], ctx)
		clk.Step(time.Second)
		<-ctx.Done()
		return ctx.Err()
	})
	assert.ErrorIs(t, next, ErrItemTimeout)
	b.close()
}

// Once an object is restored, the context its steps ran in is over: a restore of a
// million objects does not keep a million contexts under its own.
func TestAnObjectsContextEndsWithIt(t *testing.T) {
	var mu sync.Mutex
	contexts := map[string]context.Context{}
	var namespaceA error // the context of Namespace a, as its ConfigMap's steps find it
	record := func(steps []Step) []Step {
		i := slices.IndexFunc(steps, func(s Step) bool { return s.Name == StepCreate })
		return slices.Insert(steps, i+1, Step{Name: "record", Run: func(ctx context.Context, o *Object) error {
			mu.Lock()
			defer mu.Unlock()
			contexts[o.Item.Kind+" "+o.Item.Namespace+"/"+o.Item.Name] = ctx
			if o.Item.Kind == "ConfigMap" {
				// The Namespace is made, and its object done, before the ConfigMap in it.
				namespaceA = contexts["Namespace /a"].Err()
			}
			return nil
		}})
	}
	rep, err := restoreAll(context.Background(), widgetTarget(t), widgetBackup(t), testOptions{Retry: fastRetry, Steps: record})
	require.NoError(t, err)
	require.True(t, rep.OK(), firstFailure(rep))
	assert.ErrorIs(t, namespaceA, context.Canceled)
}
