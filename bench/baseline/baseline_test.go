package baseline

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/graph"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

func item(group, kind, resource, namespace, name string, owners ...*manifest.Item) *manifest.Item {
	it := &manifest.Item{Type: &manifest.Type{Group: group, Version: "v1", Kind: kind, Resource: resource}, Namespace: namespace, Name: name,
		UID: types.UID(resource + "/" + namespace + "/" + name)}
	for _, o := range owners {
		it.OwnerUIDs = append(it.OwnerUIDs, o.UID)
	}
	return it
}

func TestVeleroOrderRule(t *testing.T) {
	m := manifest.New(0)
	dep := item("apps", "Deployment", "deployments", "n", "web")
	rs := item("apps", "ReplicaSet", "replicasets", "n", "web-1", dep)
	cm := item("", "ConfigMap", "configmaps", "n", "c")
	ns := item("", "Namespace", "namespaces", "", "n")
	cl := item("cluster.x-k8s.io", "Cluster", "clusters", "n", "c1")
	sec := item("", "Secret", "secrets", "n", "s")
	for _, it := range []*manifest.Item{dep, rs, cm, ns, cl, sec} {
		_, err := m.Add(it)
		require.NoError(t, err)
	}

	var order []string
	for _, gr := range Order(m) {
		order = append(order, gr.String())
	}
	assert.Equal(t, []string{"namespaces", "secrets", "configmaps", "replicasets.apps", "deployments.apps", "clusters.cluster.x-k8s.io"}, order)

	g, err := graph.New(m, graph.Options{Rules: []graph.Rule{VeleroOrder}})
	require.NoError(t, err)
	pos := map[*manifest.Item]int{}
	for i, n := range g.Order() {
		if n.Item != nil {
			pos[n.Item] = i
		}
	}
	assert.Less(t, pos[ns], pos[sec])
	assert.Less(t, pos[sec], pos[cm])
	assert.Less(t, pos[dep], pos[cl])
	assert.Less(t, pos[dep], pos[rs], "the owner edge wins over Velero's replicasets-first order")
	assert.NotEmpty(t, g.Warnings(), "the left-out rule edge is reported")
	assert.Equal(t, 11, g.Len(), "six objects and five barriers")
}

var fastRetry = wait.Backoff{Duration: 5 * time.Millisecond, Factor: 2, Cap: 100 * time.Millisecond, Steps: 1 << 30}

func capi(t *testing.T) *archive.Backup {
	var buf bytes.Buffer
	require.NoError(t, workload.CAPI(workload.CAPIOptions{Clusters: 1, Seed: 1}).Write(&buf))
	b, err := archive.Read(context.Background(), &buf, archive.Options{})
	require.NoError(t, err)
	return b
}

func target(t *testing.T, opts memcluster.Options) (*memcluster.Server, restore.Target) {
	s, err := memcluster.StartServer(opts)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	tgt, err := restore.NewTarget(s.Config())
	require.NoError(t, err)
	return s, tgt
}

func TestVeleroOneAtATime(t *testing.T) {
	b := capi(t)
	_, tgt := target(t, memcluster.Options{})
	var running, most atomic.Int32
	po, ro := Velero(restore.PlanOptions{}, restore.RunOptions{Retry: fastRetry, OnEvent: func(ev restore.Event) {
		switch ev.Type {
		case restore.EventStarted:
			if n := running.Add(1); n > most.Load() {
				most.Store(n)
			}
		case restore.EventSucceeded, restore.EventFailed:
			running.Add(-1)
		}
	}})
	rep, err := restore.Run(context.Background(), b, tgt, po, ro)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Summary)
	assert.EqualValues(t, 1, most.Load(), "one object at a time")
	first := map[string]time.Time{}
	for o := range rep.Objects() {
		if t0, ok := first[o.Resource]; !ok || o.Created.Before(t0) {
			first[o.Resource] = o.Created
		}
	}
	assert.True(t, first["customresourcedefinitions"].Before(first["namespaces"]))
	assert.True(t, first["namespaces"].Before(first["secrets"]))
	assert.True(t, first["secrets"].Before(first["configmaps"]))
	// Velero puts Clusters last, but a Cluster owns Secrets restored earlier: that rule
	// edge would close a cycle, so it is left out and the owner edge wins.
	assert.True(t, first["clusters"].Before(first["secrets"]))
}

func TestCopyOwnerReferencesKeepsSourceUIDs(t *testing.T) {
	b := capi(t)
	_, tgt := target(t, memcluster.Options{})
	rep, err := restore.Run(context.Background(), b, tgt, restore.PlanOptions{Extensions: CopyOwnerReferences(restore.Extensions{})},
		restore.RunOptions{Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Summary)
	secrets, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace("fleet-00").
		List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	owned := 0
	for _, s := range secrets.Items {
		src, _ := b.Manifest().ByUID(types.UID(s.GetAnnotations()[restore.SourceUIDAnnotation]))
		require.NotNil(t, src)
		for i, ref := range s.GetOwnerReferences() {
			assert.Equal(t, src.OwnerUIDs[i], ref.UID, "the backup's UID, verbatim")
			owned++
		}
	}
	assert.Positive(t, owned)
}

// The Velero baseline removes every ownerReference, as Velero's restore does, and
// restoregraph keeps every link, pointing at the new owners.
func TestVeleroRemovesOwnerReferences(t *testing.T) {
	b := capi(t)
	ctx := context.Background()
	_, vtgt := target(t, memcluster.Options{})
	po, ro := Velero(restore.PlanOptions{}, restore.RunOptions{Retry: fastRetry})
	rep, err := restore.Run(ctx, b, vtgt, po, ro)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Summary)
	kept, links, err := Ownership(ctx, vtgt, b)
	require.NoError(t, err)
	assert.Positive(t, links)
	assert.Zero(t, kept, "no ownerReference survives")

	_, rtgt := target(t, memcluster.Options{})
	rep, err = restore.Run(ctx, b, rtgt, restore.PlanOptions{}, restore.RunOptions{Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Summary)
	kept, all, err := Ownership(ctx, rtgt, b)
	require.NoError(t, err)
	assert.Equal(t, links, all)
	assert.Equal(t, links, kept, "every link kept")
}
