package versionselect

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

var (
	_ Discovery = (*discovery.DiscoveryClient)(nil)
	_ Discovery = (*fakediscovery.FakeDiscovery)(nil)
)

// stubDiscovery answers with fixed groups and resources, and optionally a partial failure.
type stubDiscovery struct {
	groups []*metav1.APIGroup
	lists  []*metav1.APIResourceList
	err    error
}

func (s stubDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	return s.groups, s.lists, s.err
}

func group(name, preferred string, versions ...string) *metav1.APIGroup {
	g := &metav1.APIGroup{Name: name, PreferredVersion: metav1.GroupVersionForDiscovery{Version: preferred}}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{Version: v})
	}
	return g
}

func list(gv string, resources ...string) *metav1.APIResourceList {
	l := &metav1.APIResourceList{GroupVersion: gv}
	for _, r := range resources {
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: r})
	}
	return l
}

func TestDiscover(t *testing.T) {
	d := stubDiscovery{
		groups: []*metav1.APIGroup{group("", "v1", "v1"), group("autoscaling", "v2", "v2", "v1"), group("x.io", "v1", "v1", "v1beta1")},
		lists: []*metav1.APIResourceList{
			list("v1", "pods", "pods/status", "configmaps"),
			list("autoscaling/v1", "horizontalpodautoscalers"),
			list("autoscaling/v2", "horizontalpodautoscalers"),
			list("x.io/v1", "widgets"),
			list("x.io/v1beta1", "widgets", "gadgets"), // gadgets only at a non-preferred version
		},
	}
	target, err := Discover(context.Background(), d)
	require.NoError(t, err)
	assert.Equal(t, TargetResource{Versions: []string{"v1"}, Preferred: "v1"}, target[schema.GroupResource{Resource: "pods"}])
	_, sub := target[schema.GroupResource{Resource: "pods/status"}]
	assert.False(t, sub, "subresources are not resources")
	assert.Equal(t, TargetResource{Versions: []string{"v2", "v1"}, Preferred: "v2"}, target[schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}])
	assert.Equal(t, TargetResource{Versions: []string{"v1beta1"}, Preferred: "v1beta1"}, target[schema.GroupResource{Group: "x.io", Resource: "gadgets"}])

	t.Run("partial discovery returns what loaded", func(t *testing.T) {
		d.err = &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "broken.io", Version: "v1"}: errors.New("503")}}
		target, err := Discover(context.Background(), d)
		var partial *discovery.ErrGroupDiscoveryFailed
		assert.ErrorAs(t, err, &partial)
		assert.Len(t, target, 5)
	})
	t.Run("failure", func(t *testing.T) {
		_, err := Discover(context.Background(), stubDiscovery{err: errors.New("connection refused")})
		assert.ErrorContains(t, err, "connection refused")
	})
	t.Run("client-go's fake discovery", func(t *testing.T) {
		fd := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{list("apps/v1", "deployments")}}}
		target, err := Discover(context.Background(), fd)
		require.NoError(t, err)
		assert.Equal(t, []string{"v1"}, target[schema.GroupResource{Group: "apps", Resource: "deployments"}].Versions)
	})
}

func TestWithCRDs(t *testing.T) {
	served := Target{{Group: "x.io", Resource: "widgets"}: {Versions: []string{"v1"}, Preferred: "v1"}}
	crds := []*apiextv1.CustomResourceDefinition{
		// Already served by the target: the target's versions stand.
		crd("x.io", "widgets", ver("v2", true, true), ver("v1", true, false)),
		// New to the target, listed lowest priority first, one version not served.
		crd("x.io", "gadgets", ver("v1alpha1", true, false), ver("v1beta1", true, true), ver("v1", true, false), ver("v2", false, false)),
		// Breaks the rules: contributes no versions, only why.
		crd("x.io", "broken", ver("v1", true, false)),
	}
	got := served.WithCRDs(crds)
	assert.Equal(t, served[schema.GroupResource{Group: "x.io", Resource: "widgets"}], got[schema.GroupResource{Group: "x.io", Resource: "widgets"}])
	assert.Equal(t, TargetResource{Versions: []string{"v1", "v1beta1", "v1alpha1"}, Preferred: "v1", FromCRD: "gadgets.x.io"}, got[schema.GroupResource{Group: "x.io", Resource: "gadgets"}])
	broken := got[schema.GroupResource{Group: "x.io", Resource: "broken"}]
	assert.Empty(t, broken.Versions)
	assert.Contains(t, broken.InvalidCRD, "OneStorageVersion")
	assert.Len(t, served, 1, "the receiver is not changed")

	converted := crd("x.io", "sprockets", ver("v1beta1", true, true), ver("v1", true, false))
	converted.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.WebhookConverter}
	got = Target{}.WithCRDs([]*apiextv1.CustomResourceDefinition{converted})
	assert.Equal(t, "v1beta1", got[schema.GroupResource{Group: "x.io", Resource: "sprockets"}].Storage,
		"a webhook-converted CRD says the version it stores")
	got = Target{{Group: "x.io", Resource: "sprockets"}: {Versions: []string{"v1", "v1beta1"}, Preferred: "v1"}}.WithCRDs([]*apiextv1.CustomResourceDefinition{converted})
	assert.Equal(t, TargetResource{Versions: []string{"v1", "v1beta1"}, Preferred: "v1", Storage: "v1beta1"}, got[schema.GroupResource{Group: "x.io", Resource: "sprockets"}],
		"and so it does when the target serves it already, its versions standing")
}
