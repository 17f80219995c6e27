package manifest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	return m
}

func obj(apiVersion, kind, ns, name, uid string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(types.UID(uid))
	return u
}

func TestBuilder(t *testing.T) {
	b := NewBuilder(testMapper())
	ns := obj("v1", "Namespace", "", "shop", "ns-uid")
	require.NoError(t, b.Add(ns))

	dep := obj("apps/v1", "Deployment", "shop", "web", "dep-uid")
	dep.SetLabels(map[string]string{"app": "web"})
	dep.SetAnnotations(map[string]string{"note": "x"})
	require.NoError(t, b.Add(dep))

	cm := obj("v1", "ConfigMap", "shop", "cfg", "cm-uid")
	cm.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "dep-uid"}})
	require.NoError(t, b.Add(cm))

	m := b.Manifest()
	got, ok := m.ByUID("cm-uid")
	require.True(t, ok)
	assert.Equal(t, &Item{Type: &Type{Version: "v1", Kind: "ConfigMap", Resource: "configmaps"}, Namespace: "shop", Name: "cfg", UID: "cm-uid", OwnerUIDs: []types.UID{"dep-uid"}}, got)
	d, _ := m.ByUID("dep-uid")
	assert.Equal(t, "web", d.Labels.Get("app"))
	assert.Equal(t, "deployments", d.Resource)
	n, _ := m.ByUID("ns-uid")
	assert.Equal(t, "namespaces", n.Resource)

	t.Run("unknown kind names the object", func(t *testing.T) {
		err := b.Add(obj("example.com/v1", "Widget", "shop", "w", "w-uid"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "shop/w")
	})
	t.Run("namespace on a cluster-scoped kind", func(t *testing.T) {
		var ie *InvalidItemError
		require.ErrorAs(t, b.Add(obj("v1", "Namespace", "shop", "bad", "bad-uid")), &ie)
		assert.Equal(t, "namespace", ie.Field)
	})
	assert.Equal(t, 3, m.Len())
}
