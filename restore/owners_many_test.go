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
	const owners = 40
	objs := []map[string]any{{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "a", "uid": "ns-a"}}}
	var refs []any
	for i := range owners {
		name, uid := fmt.Sprintf("owner-%02d", i), fmt.Sprintf("uid-owner-%02d", i)
		objs = append(objs, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "a", "uid": uid}})
		refs = append([]any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid}}, refs...)
	}
	objs = append(objs, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
		"name": "dependent", "namespace": "a", "uid": "uid-dependent", "ownerReferences": refs}})
	b := backupOf(t, objs...)

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
