package restore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/restoregraph/restoregraph/memcluster"
)

const secretsThenDeployments = `
groupKindDependencies:
- satisfying: {resourceGroup: "", resourceKind: Secret}
  requiring: {resourceGroup: apps, resourceKind: Deployment}
- satisfying: {resourceGroup: example.io, resourceKind: Gizmo}
  requiring: {resourceGroup: apps, resourceKind: Deployment}
`

// A restore order starts the objects of a kind after those of another are healthy:
// its edges are the restore-order rule's, in the plan and its DOT, and the kinds it
// names that the restore does not make are warned of.
func TestOrderOrdersKinds(t *testing.T) {
	ctx := context.Background()
	order, err := ParseOrder(strings.NewReader(secretsThenDeployments), "order.yaml")
	require.NoError(t, err)
	b := backupOf(t, append(hookBackend(),
		map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s", "namespace": "hooks", "uid": "secret-s"}})...)
	_, tgt := cluster(t, memcluster.Options{})
	p, err := NewPlan(ctx, b, tgt, PlanOptions{Selection: Selection{Order: order}})
	require.NoError(t, err)
	for _, name := range []string{"backend", "other"} {
		deps, _ := dependsOnOf(t, p, "Deployment", name)
		assert.Contains(t, deps, "Secret/s (restore-order)", name)
	}
	_, gate := dependsOnOf(t, p, "Secret", "s")
	assert.Equal(t, "waits until Current: the restore order starts Deployment.apps after it", gate)
	assert.Contains(t, p.Warnings, "the restore order names Gizmo.example.io, which the restore does not make")
	dot, err := p.DOT()
	require.NoError(t, err)
	assert.Contains(t, string(dot), "restore-order")

	// A saved plan keeps the order.
	saved := saveAndRead(t, p)
	assert.Equal(t, order, saved.Selection.Order)
	opened, err := saved.Open(ctx, b, tgt, Extensions{})
	require.NoError(t, err)
	deps, _ := dependsOnOf(t, opened, "Deployment", "backend")
	assert.Contains(t, deps, "Secret/s (restore-order)")
}

// What is wrong with an order is an *OrderError naming where and why.
func TestOrderErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"unknown field", "groupKindDependencies:\n- satisfying: {resourceGroup: apps, resourceKind: Deployment}\n  requires: {resourceKind: Pod}\n",
			`unknown field "requires"`},
		{"no kind", "groupKindDependencies:\n- satisfying: {resourceGroup: apps}\n  requiring: {resourceKind: Pod}\n",
			"order.yaml: groupKindDependencies[0]: satisfying and requiring each need a resourceKind"},
		{"itself", "groupKindDependencies:\n- satisfying: {resourceKind: Pod}\n  requiring: {resourceKind: Pod}\n",
			"order.yaml: groupKindDependencies[0]: Pod cannot wait for itself"},
		{"cycle", "groupKindDependencies:\n- satisfying: {resourceKind: Secret}\n  requiring: {resourceKind: Pod}\n" +
			"- satisfying: {resourceKind: Pod}\n  requiring: {resourceGroup: apps, resourceKind: Deployment}\n" +
			"- satisfying: {resourceGroup: apps, resourceKind: Deployment}\n  requiring: {resourceKind: Secret}\n",
			"order.yaml: the kinds wait for each other: Secret → Pod → Deployment.apps → Secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseOrder(strings.NewReader(tc.text), "order.yaml")
			var oe *OrderError
			require.ErrorAs(t, err, &oe)
			assert.True(t, errors.Is(err, ErrOrder))
			assert.True(t, strings.HasPrefix(err.Error(), "invalid restore order: order.yaml"), err.Error())
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// LoadOrder reads an order from a ConfigMap's entry; a ConfigMap that is not there is
// no order.
func TestLoadOrder(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewSimpleClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: OrderConfigMap},
		Data: map[string]string{OrderConfigMapKey: secretsThenDeployments}})
	o, err := LoadOrder(ctx, cs.CoreV1(), "velero", OrderConfigMap)
	require.NoError(t, err)
	require.Len(t, o.Dependencies, 2)
	assert.Equal(t, GroupKind{Group: "apps", Kind: "Deployment"}, o.Dependencies[0].Requiring)
	o, err = LoadOrder(ctx, cs.CoreV1(), "elsewhere", OrderConfigMap)
	require.NoError(t, err)
	assert.Nil(t, o)
}
