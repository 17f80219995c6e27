package plugin

import (
	"errors"
	"testing"
	"time"

	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// addAnnotation is a v1 plugin: it annotates every item it applies to.
type addAnnotation struct{ sel ria.ResourceSelector }

func (a addAnnotation) AppliesTo() (ria.ResourceSelector, error) { return a.sel, nil }
func (a addAnnotation) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	item := in.Item.DeepCopy()
	item.SetAnnotations(map[string]string{"restored-by": "v1"})
	return ria.NewExecuteOutput(item), nil
}

// needsSecret is a v2 plugin: a Deployment waits for the Secret named in its annotation.
type needsSecret struct{ checks int }

func (n *needsSecret) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"deployments.apps"}}, nil
}
func (n *needsSecret) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	out := ria.NewExecuteOutput(in.Item).WithItemsWait()
	out.AdditionalItems = []ria.ResourceIdentifier{{GroupResource: schema.GroupResource{Resource: "secrets"}, Namespace: in.Item.GetNamespace(), Name: in.Item.GetAnnotations()["secret"]}}
	out.AdditionalItemsReadyTimeout = time.Minute
	return out, nil
}
func (n *needsSecret) AreAdditionalItemsReady([]ria.ResourceIdentifier, *ria.Restore) (bool, error) {
	n.checks++
	return n.checks >= 2, nil
}

func deployment() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace("shop")
	u.SetName("web")
	u.SetAnnotations(map[string]string{"secret": "db-creds"})
	return u
}

func TestV1PluginThroughV2(t *testing.T) {
	var r Registry
	require.NoError(t, r.Register("annotate", V1, addAnnotation{}))
	a, err := r.Lookup("annotate")
	require.NoError(t, err)
	out, err := a.Execute(&ria.ExecuteInput{Item: deployment(), ItemFromBackup: deployment(), Restore: &ria.Restore{Name: "r"}})
	require.NoError(t, err)
	assert.Equal(t, "v1", out.UpdatedItem.GetAnnotations()["restored-by"])
	ready, err := a.AreAdditionalItemsReady(nil, nil)
	assert.True(t, ready, "an adapted v1 plugin reports its items ready at once")
	assert.NoError(t, err)
}

func TestV2PluginAsksForItemsAndWaits(t *testing.T) {
	var r Registry
	p := &needsSecret{}
	require.NoError(t, r.Register("secrets", V2, p))
	a, err := r.Lookup("secrets")
	require.NoError(t, err)
	out, err := a.Execute(&ria.ExecuteInput{Item: deployment()})
	require.NoError(t, err)
	assert.True(t, out.WaitForAdditionalItems)
	assert.Equal(t, "secrets/shop/db-creds", out.AdditionalItems[0].String())
	ready, _ := a.AreAdditionalItemsReady(out.AdditionalItems, nil)
	assert.False(t, ready)
	ready, _ = a.AreAdditionalItemsReady(out.AdditionalItems, nil)
	assert.True(t, ready)
}

func TestRegistryErrors(t *testing.T) {
	var r Registry
	require.NoError(t, r.Register("p", V1, addAnnotation{}))
	assert.ErrorIs(t, r.Register("p", V1, addAnnotation{}), ErrAlreadyRegistered)
	assert.Error(t, r.Register("q", V2, addAnnotation{}), "a v1 implementation registered as v2")
	assert.Error(t, r.Register("", V1, addAnnotation{}))

	require.NoError(t, r.Register("p", V2, &needsSecret{}))
	a, err := r.Lookup("p")
	require.NoError(t, err)
	_, isV2 := a.(*needsSecret)
	assert.True(t, isV2, "the newest version registered wins")

	require.NoError(t, r.Register("future", "v3", struct{}{}))
	_, err = r.Lookup("future")
	var na *NoAdapterError
	require.ErrorAs(t, err, &na)
	assert.Equal(t, []string{"v3"}, na.Versions)
	assert.Contains(t, err.Error(), `"future"`)

	_, err = r.Lookup("missing")
	assert.Error(t, err)
	_, err = r.Actions()
	assert.True(t, errors.As(err, &na), "Actions names the plugin that cannot be adapted")
}

func TestActionsInRegistrationOrder(t *testing.T) {
	var r Registry
	require.NoError(t, r.Register("b", V1, addAnnotation{sel: ria.ResourceSelector{IncludedNamespaces: []string{"shop"}}}))
	require.NoError(t, r.Register("a", V2, &needsSecret{}))
	actions, err := r.Actions()
	require.NoError(t, err)
	require.Len(t, actions, 2)
	assert.Equal(t, "b", actions[0].Name)
	dep := schema.GroupResource{Group: "apps", Resource: "deployments"}
	assert.True(t, actions[0].AppliesTo(dep, "shop", nil))
	assert.False(t, actions[0].AppliesTo(dep, "other", nil))
	assert.True(t, actions[1].AppliesTo(dep, "other", nil))

	bad := Registry{}
	require.NoError(t, bad.Register("x", V1, addAnnotation{sel: ria.ResourceSelector{LabelSelector: "a in (b"}}))
	_, err = bad.Actions()
	assert.ErrorContains(t, err, `"a in (b"`)
}

func TestSelector(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	deps := schema.GroupResource{Group: "apps", Resource: "deployments"}
	nsGR := schema.GroupResource{Resource: "namespaces"}
	tests := []struct {
		name string
		sel  ria.ResourceSelector
		gr   schema.GroupResource
		ns   string
		lbl  labels.Set
		want bool
	}{
		{"empty selects all", ria.ResourceSelector{}, pods, "a", nil, true},
		{"included resource", ria.ResourceSelector{IncludedResources: []string{"pods"}}, pods, "a", nil, true},
		{"not included", ria.ResourceSelector{IncludedResources: []string{"pods"}}, deps, "a", nil, false},
		{"resource.group", ria.ResourceSelector{IncludedResources: []string{"deployments.apps"}}, deps, "a", nil, true},
		{"wrong group", ria.ResourceSelector{IncludedResources: []string{"deployments.extensions"}}, deps, "a", nil, false},
		{"bare resource matches any group", ria.ResourceSelector{IncludedResources: []string{"deployments"}}, deps, "a", nil, true},
		{"wildcard", ria.ResourceSelector{IncludedResources: []string{"*"}}, deps, "a", nil, true},
		{"excluded wins", ria.ResourceSelector{IncludedResources: []string{"*"}, ExcludedResources: []string{"pods"}}, pods, "a", nil, false},
		{"included namespace", ria.ResourceSelector{IncludedNamespaces: []string{"a"}}, pods, "a", nil, true},
		{"other namespace", ria.ResourceSelector{IncludedNamespaces: []string{"a"}}, pods, "b", nil, false},
		{"excluded namespace", ria.ResourceSelector{ExcludedNamespaces: []string{"a"}}, pods, "a", nil, false},
		{"cluster-scoped ignores namespace filters", ria.ResourceSelector{IncludedNamespaces: []string{"a"}}, nsGR, "", nil, true},
		{"label selector", ria.ResourceSelector{LabelSelector: "app=web"}, pods, "a", labels.Set{"app": "web"}, true},
		{"label selector misses", ria.ResourceSelector{LabelSelector: "app=web"}, pods, "a", labels.Set{"app": "db"}, false},
		{"label selector, no labels", ria.ResourceSelector{LabelSelector: "app=web"}, pods, "a", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := tc.sel.Compile()
			require.NoError(t, err)
			var l labels.Labels
			if tc.lbl != nil {
				l = tc.lbl
			}
			assert.Equal(t, tc.want, m.Matches(tc.gr, tc.ns, l))
		})
	}
}
