package restore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// Two restores into one namespace run together when they touch different objects; one
// that touches what another operation writes waits for it, and says for whom.
func TestRestoresAdmittedByWhatTheyTouch(t *testing.T) {
	b := shop(t)
	tgt := shopTarget(t)
	ctx := context.Background()
	var adm admission.Local
	// Another operation is writing the shop's settings.
	holding, err := adm.Admit(ctx, admission.Operation{ID: "someone-else", Kind: "restore",
		Writes: manifest.NewSet(manifest.ID{Resource: "configmaps", Namespace: "shop", Name: "settings"})})
	require.NoError(t, err)

	// The Secrets of shop: nothing in common with it. Both need the Namespace, which
	// neither changes when it exists.
	secrets := testOptions{Retry: fastRetry, Admitter: &adm, Name: "secrets-only", Filter: filter.Spec{IncludeResources: []string{"secrets"}},
		OnAdmissionWait: func(cs []admission.Conflict) { t.Errorf("secrets-only waited for %v", cs) }}
	rep, err := restoreAll(ctx, tgt, b, secrets)
	require.NoError(t, err)
	assert.True(t, rep.OK())

	// The ConfigMaps: settings is being written by someone else.
	p, err := planAll(ctx, tgt, b, testOptions{Filter: filter.Spec{IncludeResources: []string{"cm"}}})
	require.NoError(t, err)
	conflicts, err := p.Conflicts(ctx, RunOptions{Admitter: &adm, Name: "configmaps"})
	require.NoError(t, err)
	require.Len(t, conflicts, 1, "the plan names whom the restore would wait for")
	assert.Equal(t, "someone-else", conflicts[0].ID)

	waited := make(chan []admission.Conflict, 1)
	done := make(chan *Report, 1)
	go func() {
		rep, err := restoreAll(ctx, tgt, b, testOptions{Retry: fastRetry, Admitter: &adm, Name: "configmaps",
			Filter: filter.Spec{IncludeResources: []string{"cm"}}, OnAdmissionWait: func(cs []admission.Conflict) { waited <- cs }})
		assert.NoError(t, err)
		done <- rep
	}()
	cs := <-waited
	require.Len(t, cs, 1)
	assert.Equal(t, []manifest.ID{{Resource: "configmaps", Namespace: "shop", Name: "settings"}}, cs[0].Examples)
	select {
	case <-done:
		t.Fatal("restored while another operation writes what it writes")
	case <-time.After(50 * time.Millisecond):
	}
	holding()
	rep = <-done
	assert.True(t, rep.OK())
	cs2, err := adm.Conflicts(ctx, admission.Operation{ID: "q", Writes: manifest.NewSet(manifest.ID{Resource: "configmaps", Namespace: "shop", Name: "settings"})})
	require.NoError(t, err)
	assert.Empty(t, cs2, "the restores released what they held")
}

// idleAdmitter is a Local that says it is idle as told, and counts what it is asked.
type idleAdmitter struct {
	admission.Local
	idle  bool
	err   error
	asked int
}

func (a *idleAdmitter) Idle(context.Context) (bool, error) { return a.idle, a.err }

func (a *idleAdmitter) Conflicts(ctx context.Context, op admission.Operation) ([]admission.Conflict, error) {
	a.asked++
	return a.Local.Conflicts(ctx, op)
}

// A plan asks an idle admitter nothing more: no operation is made, which for a million
// objects is a set of a million identities, to learn that nothing conflicts with it. An
// admitter that cannot tell is an error, not an empty answer.
func TestPlanConflictsOfAnIdleAdmitter(t *testing.T) {
	ctx := context.Background()
	p, err := planAll(ctx, shopTarget(t), shop(t), testOptions{})
	require.NoError(t, err)
	idle := &idleAdmitter{idle: true}
	cs, err := p.Conflicts(ctx, RunOptions{Admitter: idle})
	require.NoError(t, err)
	assert.Empty(t, cs)
	assert.Zero(t, idle.asked)

	busy := &idleAdmitter{}
	_, err = p.Conflicts(ctx, RunOptions{Admitter: busy})
	require.NoError(t, err)
	assert.Equal(t, 1, busy.asked, "a busy admitter is asked")

	failing := &idleAdmitter{err: errors.New("admission: list operations: forbidden")}
	_, err = p.Conflicts(ctx, RunOptions{Admitter: failing})
	assert.ErrorContains(t, err, "forbidden")
}

// requestLog records the method and path of every request a client sends.
type requestLog struct {
	mu   sync.Mutex
	sent []string
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.sent = append(l.sent, r.Method+" "+r.URL.Path)
		l.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

func (l *requestLog) writes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.sent {
		if !strings.HasPrefix(s, "GET ") {
			out = append(out, s)
		}
	}
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A plan is a dry run: it sends the cluster no write request at all, even through
// cluster admission that finds an operation whose Lease has expired (which Admit
// removes, and a plan leaves).
func TestPlanThroughClusterAdmissionWritesNothing(t *testing.T) {
	s, _ := cluster(t, memcluster.Options{ServiceCIDR: "10.96.0.0/24"})
	var log requestLog
	cfg := rest.CopyConfig(s.Config())
	cfg.Wrap(log.wrap)
	tgt, err := NewTarget(cfg)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	// A process died holding an admission: its Lease was last renewed an hour ago.
	renewed := metav1.NewMicroTime(time.Now().Add(-time.Hour))
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "restoregraph-admission"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoordinationV1().Leases("restoregraph-admission").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "op-crashed", Labels: map[string]string{"restoregraph.dev/admission": "operation"},
			Annotations: map[string]string{"restoregraph.dev/kind": "restore", "restoregraph.dev/ticket": "1", "restoregraph.dev/chunks": "0"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("crashed restore-1"), LeaseDurationSeconds: ptr.To(int32(30)), RenewTime: &renewed},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	adm := &admission.Cluster{Client: cs, Holder: "planner"}

	log.sent = nil
	p, err := planAll(ctx, tgt, shop(t), testOptions{})
	require.NoError(t, err)
	_, err = p.Conflicts(ctx, RunOptions{Admitter: adm})
	require.NoError(t, err)
	assert.NotZero(t, p.Len())
	log.mu.Lock()
	assert.NotEmpty(t, log.sent, "the plan read the cluster")
	log.mu.Unlock()
	assert.Empty(t, log.writes(), "and wrote nothing to it")
	_, err = cs.CoordinationV1().Leases("restoregraph-admission").Get(ctx, "op-crashed", metav1.GetOptions{})
	assert.NoError(t, err, "the expired Lease is left for an admission to remove")
}

// A restore whose admission is lost (another process may now write what it writes)
// stops, with an error that says so.
func TestRestoreStopsWhenItsAdmissionIsLost(t *testing.T) {
	rep, err := restoreAll(context.Background(), shopTarget(t), shop(t), testOptions{Retry: fastRetry, Admitter: losingAdmitter{&admission.Local{}}})
	require.ErrorIs(t, err, admission.ErrLost)
	assert.Contains(t, err.Error(), "lease gone")
	assert.Zero(t, rep.Count(Restored), "nothing is written once the admission is lost")
	assert.Equal(t, rep.Len(), rep.Count(Cancelled))
}

// losingAdmitter admits at once and loses the admission straight away.
type losingAdmitter struct{ *admission.Local }

func (losingAdmitter) Admit(_ context.Context, op admission.Operation) (func(), error) {
	op.Lost(fmt.Errorf("%w: lease gone", admission.ErrLost))
	return func() {}, nil
}
