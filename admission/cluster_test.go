package admission

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// replicas returns two admitters, as two processes would have, on one memcluster.
func replicas(t *testing.T, lease time.Duration) (*Cluster, *Cluster, kubernetes.Interface) {
	s, err := memcluster.StartServer(memcluster.Options{})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	cs, err := kubernetes.NewForConfig(s.Config())
	require.NoError(t, err)
	a := &Cluster{Client: cs, Holder: "replica-a", LeaseDuration: lease, Poll: 20 * time.Millisecond}
	b := &Cluster{Client: cs, Holder: "replica-b", LeaseDuration: lease, Poll: 20 * time.Millisecond}
	return a, b, cs
}

func clusterAdmitAsync(c *Cluster, o Operation) <-chan func() {
	ch := make(chan func(), 1)
	go func() {
		if r, err := c.Admit(context.Background(), o); err == nil {
			ch <- r
		}
	}()
	return ch
}

// left counts the admission records in the cluster: Leases and key ConfigMaps.
func left(t *testing.T, cs kubernetes.Interface) int {
	ctx := context.Background()
	leases, err := cs.CoordinationV1().Leases("restoregraph-admission").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	cms, err := cs.CoreV1().ConfigMaps("restoregraph-admission").List(ctx, metav1.ListOptions{LabelSelector: leaseLabel})
	require.NoError(t, err)
	return len(leases.Items) + len(cms.Items)
}

func TestClusterAcrossReplicas(t *testing.T) {
	a, b, cs := replicas(t, 30*time.Second)
	ctx := context.Background()
	x, y := cm("shop", "settings"), cm("shop", "flags")

	ra, err := a.Admit(ctx, op("restore-1", []manifest.ID{x}, nil))
	require.NoError(t, err)
	rb, err := b.Admit(ctx, op("restore-2", []manifest.ID{y}, nil))
	require.NoError(t, err, "disjoint operations run together across replicas")

	_, conflicts, err := b.TryAdmit(ctx, op("restore-3", []manifest.ID{x, y}, nil))
	require.NoError(t, err)
	require.Len(t, conflicts, 2)
	for _, c := range conflicts {
		assert.True(t, c.Running)
		assert.Equal(t, 1, c.Shared)
	}
	assert.Equal(t, []string{"restore-1", "restore-2"}, []string{conflicts[0].ID, conflicts[1].ID})

	waiting := clusterAdmitAsync(b, op("restore-4", []manifest.ID{x}, nil))
	notYet(t, waiting)
	later := clusterAdmitAsync(a, op("restore-5", []manifest.ID{x}, nil))
	notYet(t, later)
	ra()
	r4 := admitted(t, waiting)
	notYet(t, later) // first come, first served
	r4()
	admitted(t, later)()
	rb()
	assert.Equal(t, 0, left(t, cs), "the admission records are gone when the operations end")
}

func TestClusterHolderThatStopsRenewingExpires(t *testing.T) {
	a, b, cs := replicas(t, time.Second)
	ctx := context.Background()
	x := cm("shop", "settings")
	crashed, err := a.enter(ctx, op("restore-1", []manifest.ID{x}, nil))
	require.NoError(t, err)
	require.NoError(t, crashed.markAdmitted(ctx))
	crashed.stopRenewing() // the process dies: its Lease stays, no longer renewed

	start := time.Now()
	r, err := b.Admit(ctx, op("restore-2", []manifest.ID{x}, nil))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond, "it waited for the lease to expire")
	r()
	assert.Equal(t, 0, left(t, cs), "the expired operation's records were removed too")
}

func TestClusterConflictsAdmitsNothing(t *testing.T) {
	a, b, _ := replicas(t, 30*time.Second)
	ctx := context.Background()
	backup := op("backup-1", nil, []manifest.ID{cm("n", "x")})
	backup.Kind = "backup"
	ra, err := a.Admit(ctx, backup)
	require.NoError(t, err)
	defer ra()
	cs, err := b.Conflicts(ctx, op("restore", []manifest.ID{cm("n", "x")}, nil))
	require.NoError(t, err)
	require.Len(t, cs, 1)
	assert.Equal(t, "backup", cs[0].Kind)
	cs, err = b.Conflicts(ctx, op("backup-2", nil, []manifest.ID{cm("n", "x")}))
	require.NoError(t, err)
	assert.Empty(t, cs, "two readers")
}

// One Cluster, left at its zero values, admits from many goroutines at once (go test
// -race tells a data race in filling its defaults).
func TestClusterAdmitsFromManyGoroutines(t *testing.T) {
	_, _, cs := replicas(t, time.Second)
	c := &Cluster{Client: cs}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			release, err := c.Admit(context.Background(), op(fmt.Sprintf("restore-%d", i), []manifest.ID{cm("shop", fmt.Sprint(i))}, nil))
			if assert.NoError(t, err) {
				release()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, "restoregraph-admission", c.Namespace)
}

// An operation whose Lease is removed (as another replica removes one it finds expired)
// or taken by another holder is told, with ErrLost, so that it stops writing.
func TestClusterLeaseLostIsTold(t *testing.T) {
	for name, takeOver := range map[string]func(ctx context.Context, cs kubernetes.Interface, l *coordinationv1.Lease) error{
		"removed": func(ctx context.Context, cs kubernetes.Interface, l *coordinationv1.Lease) error {
			return cs.CoordinationV1().Leases(l.Namespace).Delete(ctx, l.Name, metav1.DeleteOptions{})
		},
		"taken by another holder": func(ctx context.Context, cs kubernetes.Interface, l *coordinationv1.Lease) error {
			l.Spec.HolderIdentity = ptr.To("replica-b restore-2")
			_, err := cs.CoordinationV1().Leases(l.Namespace).Update(ctx, l, metav1.UpdateOptions{})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			a, _, cs := replicas(t, 600*time.Millisecond)
			ctx := context.Background()
			lost := make(chan error, 1)
			o := op("restore-1", []manifest.ID{cm("shop", "settings")}, nil)
			o.Lost = func(err error) { lost <- err }
			release, err := a.Admit(ctx, o)
			require.NoError(t, err)
			defer release()
			leases, err := cs.CoordinationV1().Leases("restoregraph-admission").List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			require.Len(t, leases.Items, 1)
			require.NoError(t, takeOver(ctx, cs, &leases.Items[0]))
			select {
			case err := <-lost:
				assert.ErrorIs(t, err, ErrLost)
				assert.Contains(t, err.Error(), "restore restore-1")
			case <-time.After(5 * time.Second):
				t.Fatal("the holder was not told that it lost its lease")
			}
		})
	}
}

// What waits is told what it waits for, once, by the Admit that makes it wait: no
// TryAdmit first, which would ask the cluster twice and lose the operation's place.
func TestClusterOnWaitIsToldOnce(t *testing.T) {
	a, b, _ := replicas(t, 30*time.Second)
	ctx := context.Background()
	x := cm("shop", "settings")
	ra, err := a.Admit(ctx, op("restore-1", []manifest.ID{x}, nil))
	require.NoError(t, err)
	var told [][]Conflict
	var mu sync.Mutex
	o := op("restore-2", []manifest.ID{x}, nil)
	o.OnWait = func(cs []Conflict) { mu.Lock(); told = append(told, cs); mu.Unlock() }
	waiting := clusterAdmitAsync(b, o)
	time.Sleep(200 * time.Millisecond) // several polls
	notYet(t, waiting)
	ra()
	admitted(t, waiting)()
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, told, 1)
	assert.Equal(t, "restore-1", told[0][0].ID)
}

// Conflicts, what a dry run asks, writes nothing: an expired Lease it finds is passed
// over and left for Admit to remove.
func TestClusterConflictsLeavesExpiredLeases(t *testing.T) {
	a, b, cs := replicas(t, 300*time.Millisecond)
	ctx := context.Background()
	x := cm("shop", "settings")
	crashed, err := a.enter(ctx, op("restore-1", []manifest.ID{x}, nil))
	require.NoError(t, err)
	require.NoError(t, crashed.markAdmitted(ctx))
	crashed.stopRenewing()
	time.Sleep(time.Second) // expired
	conflicts, err := b.Conflicts(ctx, op("restore-2", []manifest.ID{x}, nil))
	require.NoError(t, err)
	assert.Empty(t, conflicts, "an expired operation is no conflict")
	assert.Equal(t, 2, left(t, cs), "and its Lease and keys are still there")
	r, err := b.Admit(ctx, op("restore-2", []manifest.ID{x}, nil))
	require.NoError(t, err)
	r()
	assert.Equal(t, 0, left(t, cs), "Admit removes them")
}

// Idle: no operation's Lease in the cluster but expired ones, whichever replica holds
// it. Conflicts of any operation is then empty.
func TestClusterIdle(t *testing.T) {
	a, b, _ := replicas(t, time.Second) // Leases count whole seconds
	ctx := context.Background()
	idle := func() bool {
		t.Helper()
		ok, err := b.Idle(ctx)
		require.NoError(t, err)
		return ok
	}
	x := cm("shop", "settings")
	assert.True(t, idle(), "nothing was ever admitted: the records' namespace is not there")
	r, err := a.Admit(ctx, op("restore-1", []manifest.ID{x}, nil))
	require.NoError(t, err)
	assert.False(t, idle(), "another replica runs an operation")
	r()
	assert.True(t, idle(), "it ended")
	crashed, err := a.enter(ctx, op("restore-2", []manifest.ID{x}, nil))
	require.NoError(t, err)
	require.NoError(t, crashed.markAdmitted(ctx))
	crashed.stopRenewing()
	assert.False(t, idle(), "its Lease is live")
	time.Sleep(1500 * time.Millisecond)
	assert.True(t, idle(), "its Lease has expired")
	cs, err := b.Conflicts(ctx, op("restore-3", []manifest.ID{x}, nil))
	require.NoError(t, err)
	assert.Empty(t, cs, "as Conflicts sees it")
}

// An operation that resumes one of the same ID and kind (a process killed, its journal
// followed) removes its predecessor's live record instead of waiting for it to expire;
// one that does not resume, or resumes another ID, waits.
func TestClusterResumedOperationTakesItsPredecessorsPlace(t *testing.T) {
	a, b, cs := replicas(t, time.Minute)
	ctx := context.Background()
	x := cm("shop", "settings")
	killed, err := a.enter(ctx, op("restore-1", []manifest.ID{x}, nil))
	require.NoError(t, err)
	require.NoError(t, killed.markAdmitted(ctx))
	killed.stopRenewing() // the process dies; its Lease would live another minute

	_, conflicts, err := b.TryAdmit(ctx, op("restore-1", []manifest.ID{x}, nil))
	require.NoError(t, err)
	require.Len(t, conflicts, 1, "without Resumes the same ID is waited for")
	other := op("restore-2", []manifest.ID{x}, nil)
	other.Resumes = true
	_, conflicts, err = b.TryAdmit(ctx, other)
	require.NoError(t, err)
	require.Len(t, conflicts, 1, "another ID is waited for, resuming or not")

	resumed := op("restore-1", []manifest.ID{x}, nil)
	resumed.Resumes = true
	start := time.Now()
	r, err := b.Admit(ctx, resumed)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second, "admitted without waiting for the Lease to expire")
	r()
	assert.Equal(t, 0, left(t, cs), "the predecessor's records are gone with it")
}
