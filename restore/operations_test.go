package restore

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	riav2 "github.com/restoregraph/restoregraph/plugin/restoreitemaction/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// copier starts an operation on Namespace a (a volume's data being copied into it, as
// it were), which completes after `after` polls, or fails saying fail, or never
// completes when after is 0. It counts Execute, Progress and Cancel calls.
type copier struct {
	after int
	fail  string

	mu              sync.Mutex
	executed, polls int
	cancelled       []string
	onPoll          func()
	progressErr     error
}

func (c *copier) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"namespaces"}}, nil
}

func (c *copier) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	out := ria.NewExecuteOutput(in.Item)
	if in.Item.GetName() == "a" {
		c.mu.Lock()
		c.executed++
		c.mu.Unlock()
		out.OperationID = "copy-into-a"
	}
	return out, nil
}

func (c *copier) AreAdditionalItemsReady([]ria.ResourceIdentifier, *ria.Restore) (bool, error) {
	return true, nil
}

func (c *copier) Progress(_ context.Context, id string, _ *ria.Restore) (riav2.OperationProgress, error) {
	c.mu.Lock()
	c.polls++
	polls, onPoll := c.polls, c.onPoll
	c.mu.Unlock()
	if onPoll != nil {
		onPoll()
	}
	if id != "copy-into-a" {
		return riav2.OperationProgress{}, errors.New("no such operation " + id)
	}
	if c.progressErr != nil {
		return riav2.OperationProgress{}, c.progressErr
	}
	p := riav2.OperationProgress{NCompleted: int64(polls), NTotal: int64(c.after), OperationUnits: "GB", Description: "copying"}
	if c.after > 0 && polls >= c.after {
		p.Completed, p.Err = true, c.fail
	}
	return p, nil
}

func (c *copier) Cancel(_ context.Context, id string, _ *ria.Restore) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancelled = append(c.cancelled, id)
	return nil
}

var fastPoll = wait.Backoff{Duration: 5 * time.Millisecond, Factor: 1, Steps: 1 << 30}

func copierRegistry(t *testing.T, c *copier) *plugin.Registry {
	var reg plugin.Registry
	require.NoError(t, reg.Register("copier", plugin.V2, c))
	return &reg
}

// An operation a plugin started holds back exactly what depends on its object: the
// widget of namespace a starts once the copy into a has completed, the widget of b does
// not wait for it. The report lists the operation and how it ended.
func TestAsyncOperationGatesOnlyItsDependents(t *testing.T) {
	c := &copier{after: 4}
	rep, err := restoreAll(context.Background(), widgetTarget(t), widgetBackup(t), testOptions{Plugins: copierRegistry(t, c),
		OperationPoll: fastPoll, Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK(), firstFailure(rep))
	objs := map[string]ObjectResult{}
	for o := range rep.Objects() {
		objs[o.Resource+"/"+o.Namespace+"/"+o.Name] = o
	}
	ns := objs["namespaces//a"]
	require.Len(t, ns.Operations, 1)
	op := ns.Operations[0]
	assert.Equal(t, "copier", op.Plugin)
	assert.Equal(t, "copy-into-a", op.ID)
	assert.Equal(t, OperationCompleted, op.Phase)
	assert.Equal(t, "4/4 GB: copying", op.Progress)
	assert.False(t, ns.Ready.Before(op.Ended), "the Namespace is ready once its operation has completed")
	assert.False(t, objs["widgets/a/w"].Started.Before(op.Ended), "a's widget waits for the operation")
	assert.True(t, objs["widgets/b/w"].Ended.Before(op.Ended), "b's widget does not")
	assert.Equal(t, 1, c.executed)
	assert.Equal(t, 4, c.polls)
	assert.Empty(t, c.cancelled)
	assert.Empty(t, objs["namespaces//b"].Operations)
}

// An operation that fails, one that outlasts the item operation timeout (cancelled), and
// one under way when the restore is cancelled (cancelled) each fail their object and
// skip its dependents; the rest is restored.
func TestAsyncOperationThatFailsTimesOutOrIsCancelled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		c        *copier
		timeout  time.Duration
		cancel   bool
		phase    OperationPhase
		wantErr  error
		canceled bool
	}{
		{"fails", &copier{after: 2, fail: "the snapshot is gone"}, 0, false, OperationFailed, nil, false},
		{"times out", &copier{}, 50 * time.Millisecond, false, OperationCanceled, ErrOperationTimeout, true},
		{"restore cancelled", &copier{}, 0, true, OperationCanceled, context.Canceled, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				tc.c.onPoll = func() {
					if tc.c.polls == 3 {
						cancel()
					}
				}
			}
			rep, err := restoreAll(ctx, widgetTarget(t), widgetBackup(t), testOptions{Plugins: copierRegistry(t, tc.c),
				OperationPoll: fastPoll, OperationTimeout: tc.timeout, Retry: fastRetry})
			if tc.cancel {
				require.ErrorIs(t, err, context.Canceled)
			} else {
				require.NoError(t, err)
			}
			ns := byName(rep)["namespaces/a"]
			assert.Equal(t, Failed, ns.Status)
			var oe *OperationError
			require.ErrorAs(t, ns.Err, &oe)
			assert.Equal(t, "copier", oe.Plugin)
			assert.Equal(t, "copy-into-a", oe.ID)
			if tc.wantErr != nil {
				assert.ErrorIs(t, ns.Err, tc.wantErr)
			} else {
				assert.Contains(t, ns.Reason, "the snapshot is gone")
			}
			require.Len(t, ns.Operations, 1)
			assert.Equal(t, tc.phase, ns.Operations[0].Phase)
			if tc.canceled {
				assert.Equal(t, []string{"copy-into-a"}, tc.c.cancelled, "Cancel is called with the operation's ID")
			} else {
				assert.Empty(t, tc.c.cancelled)
			}
			for o := range rep.Objects() {
				switch {
				case o.Namespace == "a":
					assert.Contains(t, []Status{Skipped, Cancelled}, o.Status, "%s: behind the failed operation", o.Name)
				case o.Namespace == "b" && !tc.cancel:
					assert.Equal(t, Restored, o.Status, "%s %s", o.Resource, o.Name)
				}
			}
		})
	}
}

// earlyDeadline reports a deadline before the one its timer fires at, as a gRPC client's
// context can be seen past its deadline after the server has already answered
// DeadlineExceeded.
type earlyDeadline struct {
	context.Context
	at time.Time
}

func (c earlyDeadline) Deadline() (time.Time, bool) { return c.at, true }

// A plugin whose Progress fails because the restore's deadline has passed, before the
// restore's context says so, has its operation cancelled as the restore stopping: the
// operation is not reported failed, and the restore returns the deadline.
func TestOperationPastTheRestoreDeadlineIsCancelled(t *testing.T) {
	tctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	ctx := earlyDeadline{tctx, time.Now().Add(150 * time.Millisecond)}
	c := &copier{}
	c.onPoll = func() {
		if !time.Now().Before(ctx.at) {
			c.progressErr = errors.New("rpc error: code = DeadlineExceeded desc = context deadline exceeded")
		}
	}
	rep, err := restoreAll(ctx, widgetTarget(t), widgetBackup(t), testOptions{Plugins: copierRegistry(t, c),
		OperationPoll: fastPoll, Retry: fastRetry})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	ns := byName(rep)["namespaces/a"]
	assert.Equal(t, Failed, ns.Status)
	assert.ErrorIs(t, ns.Err, context.DeadlineExceeded)
	require.Len(t, ns.Operations, 1)
	assert.Equal(t, OperationCanceled, ns.Operations[0].Phase)
	assert.Equal(t, []string{"copy-into-a"}, c.cancelled, "Cancel is called with the operation's ID")
}

// A restore resumed from its journal follows the operations an earlier run started:
// Progress on the same ID, Execute not called again. The same of a journal in a file and
// of one in the cluster.
func TestResumedRestoreFollowsTheSameOperation(t *testing.T) {
	for _, where := range []string{"file", "cluster"} {
		t.Run(where, func(t *testing.T) {
			tgt, b := widgetTarget(t), widgetBackup(t)
			path := filepath.Join(t.TempDir(), "journal")
			open := func() (Journal, func() error) {
				j := openJournal(t, path)
				return j, j.Close
			}
			if where == "cluster" {
				_, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(context.Background(),
					&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "journals"}}},
					metav1.CreateOptions{})
				require.NoError(t, err)
				open = func() (Journal, func() error) {
					j, err := OpenClusterJournal(context.Background(), tgt.Dynamic, "journals", "resumed", nil)
					require.NoError(t, err)
					return j, func() error { return nil }
				}
			}
			first := &copier{progressErr: errors.New("the plugin's backend is away")}
			j, closeJ := open()
			rep, err := restoreAll(context.Background(), tgt, b, testOptions{Plugins: copierRegistry(t, first), OperationPoll: fastPoll, Journal: j, Retry: fastRetry})
			require.NoError(t, err)
			require.NoError(t, closeJ())
			assert.Equal(t, Failed, byName(rep)["namespaces/a"].Status)
			assert.Equal(t, 1, first.executed)

			again := &copier{after: 2}
			j, closeJ = open()
			require.Equal(t, OperationInProgress, j.Journaled()["ns-a"].Operations[0].Phase, "the journal holds the operation as it was started")
			rep, err = restoreAll(context.Background(), tgt, b, testOptions{Plugins: copierRegistry(t, again), OperationPoll: fastPoll, Journal: j, Retry: fastRetry})
			require.NoError(t, err)
			require.True(t, rep.OK(), firstFailure(rep))
			require.NoError(t, closeJ())
			ns := byName(rep)["namespaces/a"]
			assert.True(t, ns.FromJournal)
			assert.Equal(t, 0, again.executed, "Execute is not called again")
			assert.Equal(t, 2, again.polls, "the same operation is polled until it completes")
			require.Len(t, ns.Operations, 1)
			assert.Equal(t, OperationCompleted, ns.Operations[0].Phase)

			j, closeJ = open()
			assert.Equal(t, OperationCompleted, j.Journaled()["ns-a"].Operations[0].Phase, "and the journal says it completed")
			require.NoError(t, closeJ())
		})
	}
}

// An operation ID from a plugin that cannot be followed fails its object, naming it.
func TestOperationWithoutProgressFails(t *testing.T) {
	var reg plugin.Registry
	require.NoError(t, reg.Register("fire-and-forget", plugin.V2, noProgress{}))
	rep, err := restoreAll(context.Background(), widgetTarget(t), widgetBackup(t), testOptions{Plugins: &reg, Retry: fastRetry})
	require.NoError(t, err)
	ns := byName(rep)["namespaces/a"]
	assert.Equal(t, Failed, ns.Status)
	assert.Contains(t, ns.Reason, `plugin fire-and-forget: Execute returned operation "op", but the plugin has no Progress`)
}

type noProgress struct{}

func (noProgress) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"namespaces"}}, nil
}
func (noProgress) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	out := ria.NewExecuteOutput(in.Item)
	if in.Item.GetName() == "a" {
		out.OperationID = "op"
	}
	return out, nil
}
func (noProgress) AreAdditionalItemsReady([]ria.ResourceIdentifier, *ria.Restore) (bool, error) {
	return true, nil
}

// An operation started for an object that then fails before it is followed (here its
// creation is refused) is cancelled, not left running.
func TestOperationOfAFailedObjectIsCancelled(t *testing.T) {
	c := &copier{}
	tgt := widgetTarget(t)
	tgt.Dynamic = refusing{tgt.Dynamic, map[string]error{"a": apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "a", errors.New("no"))}}
	rep, err := restoreAll(context.Background(), tgt, widgetBackup(t), testOptions{Plugins: copierRegistry(t, c), OperationPoll: fastPoll, Retry: fastRetry})
	require.NoError(t, err)
	ns := byName(rep)["namespaces/a"]
	require.Equal(t, Failed, ns.Status)
	require.Len(t, ns.Operations, 1)
	assert.Equal(t, OperationCanceled, ns.Operations[0].Phase)
	assert.Contains(t, ns.Operations[0].Err, "its object failed")
	assert.Equal(t, []string{"copy-into-a"}, c.cancelled)
	assert.Zero(t, c.polls)
}

// Verify writes nothing and waits for nothing: an operation a plugin starts in its dry
// run is cancelled at once.
func TestVerifyCancelsAnOperationAtOnce(t *testing.T) {
	c := &copier{after: 1}
	tgt, b := widgetTarget(t), widgetBackup(t)
	o := testOptions{Plugins: copierRegistry(t, c), OperationPoll: fastPoll, Retry: fastRetry}
	rep, err := restoreAll(context.Background(), tgt, b, o)
	require.NoError(t, err)
	require.True(t, rep.OK(), firstFailure(rep))
	c.cancelled = nil
	v, err := verifyAll(context.Background(), tgt, b, o)
	require.NoError(t, err)
	for _, obj := range v.Objects {
		assert.Equal(t, Verified, obj.Verdict, "%s %s: %v", obj.Resource, obj.Name, obj.Problems)
	}
	assert.Equal(t, 2, c.executed, "Execute ran in the dry run too")
	assert.Equal(t, []string{"copy-into-a"}, c.cancelled, "and its operation was cancelled at once")
	assert.Equal(t, 1, c.polls, "never followed")
}
