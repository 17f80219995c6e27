package restore

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/restoregraph/restoregraph/modifier"
	"github.com/restoregraph/restoregraph/scheduler"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// shopModifiers change the shop as a user moving it to another cluster would: one rule
// of each patch kind and each condition kind.
const shopModifiers = `
version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps, namespaces: [shop]}
  patches:
  - {operation: replace, path: /spec/replicas, value: "1"}
  - {operation: add, path: /metadata/labels, value: '{"moved": "yes"}'}
- conditions: {groupResource: configmaps, resourceNameRegex: "^settings$"}
  mergePatches:
  - patchData: |
      data: {mode: staging}
      metadata: {annotations: {moved-from: prod-cluster}}
- conditions: {groupResource: persistentvolumeclaims, labelSelector: {matchLabels: {app: db}}, matches: [{path: /spec/accessModes/0, value: ReadWriteOnce}]}
  patches:
  - {operation: add, path: /spec/storageClassName, value: fast}
- conditions: {groupResource: statefulsets.apps}
  strategicPatches:
  - patchData: '{"spec": {"template": {"spec": {"containers": [{"name": "db", "image": "mirror.example.org/postgres:17"}]}}}}'
`

func TestResourceModifiersChangeWhatIsRestored(t *testing.T) {
	ctx := context.Background()
	b := shop(t)
	tgt := shopTarget(t)
	mods, err := modifier.Parse([]byte(shopModifiers))
	require.NoError(t, err)
	opts := PlanOptions{Selection: Selection{Modifiers: mods, NamespaceMappings: map[string]string{"shop": "shop-moved"}}}

	p, err := NewPlan(ctx, b, tgt, opts)
	require.NoError(t, err)
	planned := map[string][]modifier.Candidate{}
	for o := range p.Objects() {
		if len(o.Modifiers) > 0 {
			planned[o.Resource+"/"+o.Name] = o.Modifiers
		}
	}
	assert.Equal(t, map[string][]modifier.Candidate{
		"deployments/web":                  {{Rule: 0}},
		"configmaps/settings":              {{Rule: 1}},
		"persistentvolumeclaims/data-db-0": {{Rule: 2, Conditional: true}},
		"statefulsets/db":                  {{Rule: 3}},
	}, planned, "the plan shows which rules apply to which objects, judged in the backup's namespace")

	var saved bytes.Buffer
	require.NoError(t, p.WriteJSON(&saved))
	back, err := ReadPlan(&saved)
	require.NoError(t, err)
	require.NotNil(t, back.Selection.Modifiers)
	assert.Equal(t, mods.Spec(), back.Selection.Modifiers.Spec(), "a saved plan carries its modifiers")
	p, err = back.Open(ctx, b, tgt, Extensions{})
	require.NoError(t, err, "and is the same plan again")

	rep, err := Apply(ctx, p, tgt, RunOptions{Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", firstFailure(rep))
	applied := map[string][]int{}
	for o := range rep.Objects() {
		if len(o.Modifiers) > 0 {
			applied[o.Resource+"/"+o.Name] = o.Modifiers
		}
	}
	assert.Equal(t, map[string][]int{"deployments/web": {0}, "configmaps/settings": {1}, "persistentvolumeclaims/data-db-0": {2}, "statefulsets/db": {3}}, applied)

	get := func(gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
		o, err := tgt.Dynamic.Resource(gvr).Namespace("shop-moved").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return o
	}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	web := get(deployments, "web")
	replicas, _, _ := unstructured.NestedInt64(web.Object, "spec", "replicas")
	assert.EqualValues(t, 1, replicas)
	assert.Equal(t, "yes", web.GetLabels()["moved"])
	assert.Equal(t, "shop-moved", web.GetNamespace(), "a modifier does not undo the namespace mapping")
	settings := get(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "settings")
	assert.Equal(t, map[string]any{"mode": "staging"}, settings.Object["data"])
	assert.Equal(t, "prod-cluster", settings.GetAnnotations()["moved-from"])
	claim := get(schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, "data-db-0")
	class, _, _ := unstructured.NestedString(claim.Object, "spec", "storageClassName")
	assert.Equal(t, "fast", class)
	db := get(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, "db")
	containers, _, _ := unstructured.NestedSlice(db.Object, "spec", "template", "spec", "containers")
	require.Len(t, containers, 1)
	assert.Equal(t, "mirror.example.org/postgres:17", containers[0].(map[string]any)["image"], "merged by the container's name")

	// Verify expects the modified objects; a target where the modifications are undone
	// differs, by the field.
	v, err := Verify(ctx, p, tgt, RunOptions{Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, v.OK(), "%v", v.Summary)
	unstructured.SetNestedField(web.Object, int64(3), "spec", "replicas")
	web.SetLabels(nil)
	_, err = tgt.Dynamic.Resource(deployments).Namespace("shop-moved").Update(ctx, web, metav1.UpdateOptions{})
	require.NoError(t, err)
	v, err = Verify(ctx, p, tgt, RunOptions{Retry: fastRetry})
	require.NoError(t, err)
	got := verdicts(v)["deployments/web"]
	assert.Equal(t, Differs, got.Verdict)
	assert.Equal(t, []string{"metadata.labels.moved: the resource modifiers set yes, the target has ", "spec.replicas: want 1, the target has 3"}, got.Problems)
}

func TestAResourceModifierThatFailsFailsItsObject(t *testing.T) {
	ctx := context.Background()
	b := shop(t)
	tgt := shopTarget(t)
	mods, err := modifier.Parse([]byte(`
version: v1
resourceModifierRules:
- conditions: {groupResource: serviceaccounts, resourceNameRegex: "^app$"}
  patches: [{operation: remove, path: /imagePullSecrets}]
`))
	require.NoError(t, err)
	rep, err := Run(ctx, b, tgt, PlanOptions{Selection: Selection{Modifiers: mods}}, RunOptions{Retry: fastRetry})
	require.NoError(t, err)
	var failed, awaiting []ObjectResult
	for o := range rep.Objects() {
		var pe *PluginError
		switch {
		case o.Status != Failed:
		case errors.As(o.Err, &pe):
			awaiting = append(awaiting, o)
		default:
			failed = append(failed, o)
		}
	}
	require.Len(t, failed, 1, "the ServiceAccount fails")
	assert.Equal(t, "app", failed[0].Name)
	var se *StepError
	require.ErrorAs(t, failed[0].Err, &se)
	assert.Equal(t, StepModify, se.Step)
	var re *modifier.RuleError
	require.ErrorAs(t, failed[0].Err, &re)
	assert.Equal(t, 0, re.Rule)
	assert.Contains(t, failed[0].Reason, "resourceModifierRules[0]: patches:")
	require.Len(t, awaiting, 3, "the Pods that run as it awaited it, as the Pod action's additional item, and fail with it")
	for _, o := range awaiting {
		assert.Equal(t, "pods", o.Resource)
		assert.ErrorIs(t, o.Err, scheduler.ErrDependencyFailed)
	}
	assert.Equal(t, 4, rep.Count(Failed), "and nothing else")
}
