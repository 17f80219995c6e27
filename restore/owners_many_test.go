package restore

import (
	"context"
	"fmt"
	"testing"

	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAnObjectWithManyOwnersKeepsThemAll: each of an object's owner references points
// at its owner's new UID, however many it has and in whatever order it lists them.
func TestAnObjectWithManyOwnersKeepsThemAll(t *testing.T) {
	b := backupOf(t, manyOwners(40)...)
	_, cfg := cluster(t, memcluster.Options{GC: true})
	rep, err := restoreAll(context.Background(), cfg, b, testOptions{Workers: 4, Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK(), "summary %v, first failure: %v", rep.Summary, firstFailure(rep))
	for o := range rep.Objects() {
		if o.Name == "dependent" {
			assert.Empty(t, o.Warnings, "no owner dropped")
		}
	}
	assertComplete(t, cfg, b) // every owner reference of the dependent live, at the new UIDs
}

// BenchmarkRestoreAnObjectWithManyOwners plans and restores n ConfigMaps and one that
// lists them all as its owners (manyOwners) into the embedded server: each of the
// dependent's references is pointed at a new UID.
func BenchmarkRestoreAnObjectWithManyOwners(b *testing.B) {
	const n = 20_000
	backup := backupOf(b, manyOwners(n)...)
	for b.Loop() {
		b.StopTimer()
		_, cfg := cluster(b, memcluster.Options{})
		b.StartTimer()
		rep, err := restoreAll(context.Background(), cfg, backup, testOptions{Workers: 4, Retry: fastRetry})
		if err != nil || !rep.OK() {
			b.Fatal(err, firstFailure(rep))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1e3, "ms/restore")
}

// manyOwners returns the namespace a, n ConfigMaps in it, and a ConfigMap "dependent"
// that lists them all as its owners, the last first.
func manyOwners(n int) []map[string]any {
	objs := []map[string]any{{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "a", "uid": "ns-a"}}}
	refs := make([]any, n)
	for i := range n {
		name, uid := fmt.Sprintf("owner-%05d", i), fmt.Sprintf("uid-owner-%05d", i)
		objs = append(objs, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "a", "uid": uid}})
		refs[n-1-i] = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid}
	}
	return append(objs, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
		"name": "dependent", "namespace": "a", "uid": "uid-dependent", "ownerReferences": refs}})
}
