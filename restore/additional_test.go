package restore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"github.com/restoregraph/restoregraph/readiness"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
)

// slowItems asks, for ConfigMap a, for ConfigMap b first, waits for it with a timeout of
// its own, and says it is ready after readyAfter on the restore's clock (never, when
// zero), or fails with err.
type slowItems struct {
	clock      *clocktesting.FakeClock
	timeout    time.Duration
	readyAfter time.Duration
	err        error
	first      atomic.Pointer[time.Time]
	polling    atomic.Bool
}

func (p *slowItems) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"configmaps"}}, nil
}

func (p *slowItems) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	out := ria.NewExecuteOutput(in.Item)
	if in.Item.GetName() != "a" {
		return out, nil
	}
	out.AdditionalItems = []ria.ResourceIdentifier{{GroupResource: schema.GroupResource{Resource: "configmaps"}, Namespace: "n", Name: "b"}}
	out.AdditionalItemsReadyTimeout = p.timeout
	return out.WithItemsWait(), nil
}

func (p *slowItems) AreAdditionalItemsReady([]ria.ResourceIdentifier, *ria.Restore) (bool, error) {
	now := p.clock.Now()
	p.first.CompareAndSwap(nil, &now)
	p.polling.Store(true)
	if p.err != nil {
		return false, p.err
	}
	return p.readyAfter > 0 && now.Sub(*p.first.Load()) >= p.readyAfter, nil
}

func smallBackup(t *testing.T) *archive.Backup {
	return backupOf(t,
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "n", "uid": "ns"}},
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "namespace": "n", "uid": "a"}},
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "b", "namespace": "n", "uid": "b"}})
}

// The item timeout bounds an object's own work; a plugin's wait for its additional
// items has the plugin's timeout, and is not cut short by a shorter item timeout.
func TestAdditionalItemsWaitIsNotCutByTheItemTimeout(t *testing.T) {
	for _, tc := range []struct {
		name       string
		readyAfter time.Duration
		err        error
		warning    string
	}{
		{"ready after 7 of 10 minutes", 7 * time.Minute, nil, ""},
		{"never ready: the plugin's 10 minutes run out", 0, nil, "not ready after 10m0s"},
		{"AreAdditionalItemsReady fails", 0, errors.New("backend unreachable"), "backend unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
			p := &slowItems{clock: clk, timeout: 10 * time.Minute, readyAfter: tc.readyAfter, err: tc.err}
			var reg plugin.Registry
			require.NoError(t, reg.Register("slow", plugin.V2, p))
			_, tgt := cluster(t, memcluster.Options{})

			done := make(chan struct{})
			go func() { // the clock moves only while the plugin is being polled
				for {
					select {
					case <-done:
						return
					case <-time.After(time.Millisecond):
					}
					if p.polling.Load() && clk.HasWaiters() {
						clk.Step(30 * time.Second)
					}
				}
			}()
			rep, err := restoreAll(context.Background(), tgt, smallBackup(t), testOptions{Clock: clk, ItemTimeout: 5 * time.Minute,
				Plugins: &reg, Retry: fastRetry})
			close(done)
			require.NoError(t, err)
			a := byName(rep)["configmaps/a"]
			assert.Equal(t, Restored, a.Status, "%s", a.Reason)
			assert.True(t, rep.OK())
			switch {
			case tc.readyAfter > 0:
				assert.GreaterOrEqual(t, a.Waited, 7*time.Minute, "waited past the 5-minute item timeout")
				assert.Empty(t, a.Warnings)
			default:
				require.Len(t, a.Warnings, 1, "the report says the wait ended without the items ready")
				assert.Contains(t, a.Warnings[0], tc.warning)
			}
		})
	}
}

// The object's own work is bounded by the item timeout, on the restore's clock.
func TestItemTimeoutBoundsTheObjectsOwnWork(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	b := &budget{clock: clk, total: time.Minute}
	err := b.run(context.Background(), func(ctx context.Context) error {
		clk.Step(2 * time.Minute)
		<-ctx.Done()
		return ctx.Err()
	})
	assert.ErrorIs(t, err, ErrItemTimeout)
	assert.ErrorContains(t, err, "1m0s")
	assert.Zero(t, b.remaining())
}

// An alarm used again, by another object's budget, cancels the run it is set for at
// that run's budget, and no other.
func TestItemTimeoutAlarmsUsedAgain(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	var alarms sync.Pool
	long := &budget{clock: clk, total: time.Minute, alarms: &alarms}
	require.NoError(t, long.run(context.Background(), func(ctx context.Context) error { return nil }))
	short := &budget{clock: clk, total: 10 * time.Second, alarms: &alarms}
	err := short.run(context.Background(), func(ctx context.Context) error {
		clk.Step(20 * time.Second)
		<-ctx.Done()
		return ctx.Err()
	})
	assert.ErrorIs(t, err, ErrItemTimeout)
	for range 3 {
		require.NoError(t, long.run(context.Background(), func(ctx context.Context) error {
			clk.Step(15 * time.Second)
			return ctx.Err()
		}), "within its minute")
	}
	err = long.run(context.Background(), func(ctx context.Context) error {
		clk.Step(15 * time.Second)
		<-ctx.Done()
		return ctx.Err()
	})
	assert.ErrorIs(t, err, ErrItemTimeout, "the minute spent")
}

// In strict mode, additional items that are not ready fail their object, with the wait's
// typed error in the report.
func TestStrictAdditionalItemsFailTyped(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	p := &slowItems{clock: clk, timeout: 10 * time.Minute, err: errors.New("backend unreachable")}
	var reg plugin.Registry
	require.NoError(t, reg.Register("slow", plugin.V2, p))
	_, tgt := cluster(t, memcluster.Options{})
	rep, err := restoreAll(context.Background(), tgt, smallBackup(t), testOptions{Clock: clk, Plugins: &reg, Retry: fastRetry,
		AdditionalItems: readiness.AdditionalItemsWaiter{Strict: true}})
	require.NoError(t, err)
	a := byName(rep)["configmaps/a"]
	assert.Equal(t, Failed, a.Status)
	var wait *readiness.AdditionalItemsError
	require.ErrorAs(t, a.Err, &wait)
	assert.Equal(t, "slow", wait.Plugin)
}
