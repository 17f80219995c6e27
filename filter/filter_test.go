package filter

import (
	"testing"

	"github.com/restoregraph/restoregraph/manifest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var catalog = Catalog{
	{GroupResource: schema.GroupResource{Group: "apps", Resource: "deployments"}, Kind: "Deployment", Singular: "deployment", ShortNames: []string{"deploy"}},
	{GroupResource: schema.GroupResource{Resource: "configmaps"}, Kind: "ConfigMap", Singular: "configmap", ShortNames: []string{"cm"}},
	{GroupResource: schema.GroupResource{Resource: "events"}, Kind: "Event", Singular: "event", ShortNames: []string{"ev"}},
	{GroupResource: schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, Kind: "Event", Singular: "event", ShortNames: []string{"ev"}},
	{GroupResource: schema.GroupResource{Group: "cluster.x-k8s.io", Resource: "clusters"}, Kind: "Cluster"},
}

func TestResolveAsKubectlDoes(t *testing.T) {
	deployments := []schema.GroupResource{{Group: "apps", Resource: "deployments"}}
	for _, name := range []string{"deployments", "deployment", "deploy", "Deployment", "deployments.apps", "deploy.apps", "DEPLOYMENT.apps"} {
		got, err := catalog.Resolve(name)
		require.NoError(t, err, name)
		assert.Equal(t, deployments, got, name)
	}
	got, err := catalog.Resolve("events")
	require.NoError(t, err)
	assert.Len(t, got, 2, "the same name in two groups: both")
	got, err = catalog.Resolve("events.events.k8s.io")
	require.NoError(t, err)
	assert.Equal(t, []schema.GroupResource{{Group: "events.k8s.io", Resource: "events"}}, got)

	for _, unknown := range []string{"deploymentz", "deployments.batch", "cm.apps"} {
		_, err = catalog.Resolve(unknown)
		var ue *UnknownResourceError
		require.ErrorAs(t, err, &ue, unknown)
		assert.Equal(t, unknown, ue.Name)
	}
}

func item(group, resource, kind, ns, name string, l map[string]string) *manifest.Item {
	return &manifest.Item{Type: &manifest.Type{Group: group, Version: "v1", Kind: kind, Resource: resource}, Namespace: ns, Name: name, UID: "u", Labels: manifest.PairsFromMap(l)}
}

func TestExclusion(t *testing.T) {
	web := item("apps", "deployments", "Deployment", "shop", "web", map[string]string{"app": "web"})
	cm := item("", "configmaps", "ConfigMap", "shop", "settings", nil)
	other := item("", "configmaps", "ConfigMap", "other", "c", nil)
	cluster := item("cluster.x-k8s.io", "clusters", "Cluster", "", "c1", map[string]string{"name": "c1"})
	shopNS := item("", "namespaces", "Namespace", "", "shop", nil)
	yes, no := true, false

	for _, tc := range []struct {
		name     string
		spec     Spec
		excluded map[*manifest.Item]string
	}{
		{"everything", Spec{}, nil},
		{"one namespace: cluster-scoped out by default", Spec{IncludeNamespaces: []string{"shop"}},
			map[*manifest.Item]string{other: "namespace other is not included", cluster: "cluster-scoped resources are not included"}},
		{"one namespace, cluster-scoped in", Spec{IncludeNamespaces: []string{"shop"}, IncludeClusterResources: &yes},
			map[*manifest.Item]string{other: "namespace other is not included"}},
		{"every namespace, cluster-scoped out", Spec{IncludeClusterResources: &no},
			map[*manifest.Item]string{cluster: "cluster-scoped resources are not included"}},
		{"excluded namespace", Spec{ExcludeNamespaces: []string{"shop"}},
			map[*manifest.Item]string{web: "namespace shop is not included", cm: "namespace shop is not included",
				shopNS: "namespace shop is not included", cluster: "cluster-scoped resources are not included"}},
		{"resources by short name and kind", Spec{IncludeResources: []string{"cm", "Cluster"}},
			map[*manifest.Item]string{web: "deployments.apps is not included"}},
		{"excluded resource wins", Spec{IncludeResources: []string{"*"}, ExcludeResources: []string{"configmaps"}},
			map[*manifest.Item]string{cm: "configmaps is not included", other: "configmaps is not included"}},
		{"selector", Spec{Selector: labels.SelectorFromSet(labels.Set{"app": "web"})},
			map[*manifest.Item]string{cm: "its labels do not match app=web", other: "its labels do not match app=web",
				cluster: "its labels do not match app=web", shopNS: "its labels do not match app=web"}},
		{"or-selectors: one of them matches", Spec{OrSelectors: mustParseOr(t, "app=web or name=c1")},
			map[*manifest.Item]string{cm: "its labels match none of app=web or name=c1", other: "its labels match none of app=web or name=c1",
				shopNS: "its labels match none of app=web or name=c1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := tc.spec.Resolve(catalog)
			require.NoError(t, err)
			for _, it := range []*manifest.Item{web, cm, other, cluster, shopNS} {
				assert.Equal(t, tc.excluded[it], f.Exclusion(it, nil), "%s", it)
			}
		})
	}
	needed := func(*manifest.Item) bool { return true }
	f, err := Spec{IncludeNamespaces: []string{"shop"}}.Resolve(catalog)
	require.NoError(t, err)
	assert.Empty(t, f.Exclusion(cluster, needed), "cluster-scoped, decided automatically: what the selection needs")

	_, err = Spec{IncludeResources: []string{"widgets"}}.Resolve(catalog)
	var ue *UnknownResourceError
	assert.ErrorAs(t, err, &ue)
	_, err = Spec{Selector: labels.SelectorFromSet(labels.Set{"a": "b"}), OrSelectors: mustParseOr(t, "c=d")}.Resolve(catalog)
	assert.ErrorIs(t, err, ErrBothSelectors, "Velero takes one of labelSelector and orLabelSelectors")
	assert.False(t, Spec{OrSelectors: mustParseOr(t, "c=d")}.Empty())
	assert.True(t, Spec{}.Empty())
	assert.False(t, Spec{ExcludeNamespaces: []string{"x"}}.Empty())
}

func mustParseOr(t *testing.T, s string) []labels.Selector {
	sels, err := ParseOr(s)
	require.NoError(t, err)
	return sels
}

func TestParseOr(t *testing.T) {
	sels, err := ParseOr("app=web or tier in (db,cache)")
	require.NoError(t, err)
	require.Len(t, sels, 2)
	assert.Equal(t, "app=web or tier in (cache,db)", OrString(sels))
	_, err = ParseOr("app=web or ==x")
	assert.ErrorContains(t, err, `or-selector "==x"`)
}
