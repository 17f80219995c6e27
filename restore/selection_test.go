package restore

import (
	"context"
	"testing"

	"github.com/restoregraph/restoregraph/filter"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// restored returns the names of the objects a report says were made, by resource.
func restored(rep *Report) map[string][]string {
	out := map[string][]string{}
	for o := range rep.Objects() {
		if o.Status == Restored || o.Status == Adopted {
			out[o.Resource] = append(out[o.Resource], o.Name)
		}
	}
	return out
}

func TestFilterByResourceAndSelector(t *testing.T) {
	b := shop(t)
	rep, err := restoreAll(context.Background(), shopTarget(t), b, testOptions{Retry: fastRetry, Filter: filter.Spec{
		IncludeResources: []string{"cm", "Deployment", "rs", "pods"}, Selector: labels.SelectorFromSet(labels.Set{"app": "web"})}})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", firstFailure(rep))
	got := restored(rep)
	assert.Len(t, got["pods"], 3, "the web Pods: %v", got)
	assert.Len(t, got["replicasets"], 1)
	assert.Equal(t, []string{"shop"}, got["namespaces"], "the namespace what is restored lives in")
	assert.Empty(t, got["deployments"], "the Deployment has no app=web label")
	assert.Empty(t, got["configmaps"])
	assert.Len(t, got, 3)
	// The ReplicaSet's owner, the Deployment, was filtered out and is not in the target.
	for o := range rep.Objects() {
		if o.Resource == "replicasets" {
			require.Len(t, o.Warnings, 1)
			assert.Contains(t, o.Warnings[0], "owner Deployment web")
			assert.Contains(t, o.Warnings[0], "dropped")
		}
		if o.Status == Skipped {
			assert.Equal(t, Filtered, o.SkippedBy, "%s %s", o.Kind, o.Name)
		}
	}
}

// Or-selectors take what matches any of them, as Velero's orLabelSelectors; a saved
// plan carries them.
func TestFilterByOrSelectors(t *testing.T) {
	or, err := filter.ParseOr("app=db or app=debug")
	require.NoError(t, err)
	p, err := planAll(context.Background(), shopTarget(t), shop(t), testOptions{Filter: filter.Spec{IncludeResources: []string{"pods", "pvc"}, OrSelectors: or}})
	require.NoError(t, err)
	rep, err := Apply(context.Background(), p, shopTarget(t), RunOptions{Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", firstFailure(rep))
	got := restored(rep)
	assert.ElementsMatch(t, []string{"db-0", "debug"}, got["pods"])
	assert.Equal(t, []string{"data-db-0"}, got["persistentvolumeclaims"])
	for o := range rep.Objects() {
		if o.Resource == "pods" && o.Status == Skipped {
			assert.Contains(t, o.Reason, "its labels match none of app=db or app=debug", o.Name)
		}
	}
	saved := saveAndRead(t, p).Selection.Filter.OrSelectors
	assert.Equal(t, "app=db or app=debug", filter.OrString(saved))
}

func TestFilterByNamespaceKeepsWhatTheSelectionNeeds(t *testing.T) {
	b := capiBackup(t, 2)
	rep, err := restoreAll(context.Background(), shopTarget(t), b, testOptions{Retry: fastRetry, Filter: filter.Spec{IncludeNamespaces: []string{"fleet-01"}}})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", firstFailure(rep))
	for o := range rep.Objects() {
		switch {
		case o.Resource == "customresourcedefinitions":
			assert.Equal(t, Restored, o.Status, "the CRDs of what is restored, though cluster-scoped")
		case o.Namespace == "fleet-01" || o.Name == "fleet-01":
			assert.Equal(t, Restored, o.Status, "%s %s", o.Kind, o.Name)
		default:
			assert.Equal(t, Skipped, o.Status, "%s %s/%s", o.Kind, o.Namespace, o.Name)
			assert.Equal(t, Filtered, o.SkippedBy)
		}
	}
}

func TestUnknownResourceNameIsRefused(t *testing.T) {
	_, err := planAll(context.Background(), shopTarget(t), shop(t), testOptions{Filter: filter.Spec{ExcludeResources: []string{"gizmos"}}})
	var ue *filter.UnknownResourceError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, "gizmos", ue.Name)
}

func TestNamespaceMappingAndRestoreLabels(t *testing.T) {
	b := shop(t)
	tgt := shopTarget(t)
	ctx := context.Background()
	// The mapped-to namespace exists already: it is adopted, and everything goes in it.
	_, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx,
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop-copy"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	rep, err := restoreAll(ctx, tgt, b, testOptions{Retry: fastRetry, NamespaceMappings: map[string]string{"shop": "shop-copy"},
		BackupName: "shop-nightly", Name: "shop-copy-1"})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", firstFailure(rep))
	for o := range rep.Objects() {
		if o.Kind == "Namespace" {
			assert.Equal(t, Adopted, o.Status)
			assert.Equal(t, "shop-copy", o.TargetName)
		} else {
			assert.Equal(t, "shop-copy", o.TargetNamespace, "%s %s", o.Kind, o.Name)
		}
	}
	rb := get2(t, tgt, schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, "shop-copy", "reader")
	subjects, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
	assert.Equal(t, "shop-copy", subjects[0].(map[string]any)["namespace"], "the subject follows its namespace")

	made, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("shop-copy").
		List(ctx, metav1.ListOptions{LabelSelector: RestoreNameLabel + "=shop-copy-1," + BackupNameLabel + "=shop-nightly"})
	require.NoError(t, err)
	require.Len(t, made.Items, 1, "one label selector finds what the restore made")
	assert.Equal(t, "settings", made.Items[0].GetName(), "kube-root-ca.crt is the target's own")
	_, err = tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("shop").Get(ctx, "settings", metav1.GetOptions{})
	assert.Error(t, err, "nothing went to the source namespace")
}

func get2(t *testing.T, tgt Target, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	o, err := tgt.Dynamic.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return o
}

func TestLabelValuesFitKubernetes(t *testing.T) {
	assert.Equal(t, "shop-nightly", labelValue("shop-nightly"))
	long := labelValue("a-backup-name-that-is-much-longer-than-sixty-three-characters-allowed-in-labels")
	assert.LessOrEqual(t, len(long), 63)
	assert.NotEqual(t, long, labelValue("a-backup-name-that-is-much-longer-than-sixty-three-characters-allowed-in-labels-2"))
	assert.Equal(t, "daily-", labelValue("daily/2026")[:6])
}

func TestPrioritiesForResourcesNotInTheBackupAreAWarning(t *testing.T) {
	p, err := planAll(context.Background(), shopTarget(t), shop(t), testOptions{Priorities: map[schema.GroupResource][]string{
		{Group: "autoscaling", Resource: "horizontalpodautoscalers"}: {"v1"},
		{Group: "x.io", Resource: "gizmos"}:                          {"v2"},
	}})
	require.NoError(t, err)
	assert.Contains(t, p.Warnings, "version priorities name gizmos.x.io, which the backup does not hold")
	for _, w := range p.Warnings {
		assert.NotContains(t, w, "horizontalpodautoscalers", "the backup holds HPAs")
	}
}

// Velero's names for the existing-object policy are taken beside restoregraph's.
func TestParseExisting(t *testing.T) {
	for name, want := range map[string]Existing{"": Adopt, "adopt": Adopt, "none": Adopt, "update": Update, "fail": Fail} {
		got, err := ParseExisting(name)
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
	}
	_, err := ParseExisting("replace")
	assert.ErrorContains(t, err, `"replace": want adopt (Velero's none), update or fail`)
}
