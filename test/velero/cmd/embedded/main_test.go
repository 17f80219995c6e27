package main

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"golang.org/x/mod/semver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/restore"
)

// fixture is a backup the real Velero server wrote (make fixtures writes it again).
const fixture = "../../../../testdata/velero/shop-and-fleet/shop-and-fleet.tar.gz"

// A Restore, in Velero's own types, of one namespace of a backup the real Velero server
// wrote, mapped onto another, carried out by the library inside Velero's module graph:
// every object lands in the mapped namespace, and owners are remapped to the restored
// objects' UIDs.
func TestCarryOutAVeleroRestoreInsideVelerosModuleGraph(t *testing.T) {
	cfg, stop, err := memcluster.Start(memcluster.Options{GC: true})
	require.NoError(t, err)
	t.Cleanup(stop)
	target, err := restore.NewTarget(cfg)
	require.NoError(t, err)
	r := &velerov1.Restore{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-elsewhere", Namespace: "velero"},
		Spec: velerov1.RestoreSpec{BackupName: "shop-and-fleet", IncludedNamespaces: []string{"shop"},
			NamespaceMapping: map[string]string{"shop": "shop-elsewhere"}},
	}
	ctx := context.Background()
	rep, err := restoreInto(ctx, fixture, r, target)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%d failed, %d skipped", rep.Count(restore.Failed), rep.Count(restore.Skipped))
	restored := 0
	for o := range rep.Objects() {
		if o.Status != restore.Restored {
			continue
		}
		restored++
		if o.Kind != "Namespace" && o.Namespace != "" {
			assert.Equal(t, "shop-elsewhere", o.TargetNamespace, "%s %s/%s", o.Kind, o.Namespace, o.Name)
		}
	}
	assert.Greater(t, restored, 20, "the shop namespace's objects")

	replicaSets, err := target.Dynamic.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}).
		Namespace("shop-elsewhere").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, replicaSets.Items)
	for _, rs := range replicaSets.Items {
		refs := rs.GetOwnerReferences()
		require.Len(t, refs, 1, rs.GetName())
		owner, err := target.Dynamic.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).
			Namespace("shop-elsewhere").Get(ctx, refs[0].Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, owner.GetUID(), refs[0].UID, "ReplicaSet %s owned by the restored Deployment", rs.GetName())
	}
}

// The library raises none of Velero's requirements: every module the library's
// requirements reach in this module's graph (go mod graph) is at a version no higher
// than the one Velero v1.18.3 and its AWS plugin reach. Modules only the library brings
// raise nothing. Velero then selects what it selects without restoregraph.
func TestVelerosRequirementsAreNotRaised(t *testing.T) {
	cmd := exec.Command("go", "mod", "graph")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("go mod graph: %v\n%s", err, exit.Stderr)
	}
	require.NoError(t, err)
	requires := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		from, to, ok := strings.Cut(line, " ")
		require.True(t, ok, line)
		requires[from] = append(requires[from], to)
	}
	velero := reach(requires, "github.com/vmware-tanzu/velero@v1.18.3", "github.com/vmware-tanzu/velero-plugin-for-aws@v1.14.3")
	library := reach(requires, "github.com/restoregraph/restoregraph@v0.0.0")
	require.Contains(t, velero, "k8s.io/client-go")
	require.Contains(t, library, "k8s.io/client-go")
	raised := map[string]string{}
	for path, version := range library {
		if theirs, ok := velero[path]; ok && semver.Compare(version, theirs) > 0 {
			raised[path] = theirs + " -> " + version
		}
	}
	assert.Empty(t, raised, "Velero's requirements raised by restoregraph's")
}

// reach is every module the graph requires from roots on, at the highest version it
// names of each, as minimal version selection picks.
func reach(requires map[string][]string, roots ...string) map[string]string {
	selected := map[string]string{}
	seen := map[string]bool{}
	for next := roots; len(next) > 0; {
		node := next[len(next)-1]
		next = next[:len(next)-1]
		if seen[node] {
			continue
		}
		seen[node] = true
		path, version, _ := strings.Cut(node, "@")
		if cur, ok := selected[path]; !ok || semver.Compare(version, cur) > 0 {
			selected[path] = version
		}
		next = append(next, requires[node]...)
	}
	return selected
}
