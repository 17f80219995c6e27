package versionselect

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func obj(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + kind + "-" + name))
	return u
}

// testBackup holds: a CRD for widgets.x.io whose versions are listed lowest priority
// first, a widget at v1beta1 (preferred) and v1alpha1, a deployment at v1 (preferred)
// and v1beta2, a pod, a flowschema at a version the target no longer serves, and a
// gadget of a group nobody serves.
func testBackup(t *testing.T) *archive.Backup {
	t.Helper()
	var buf bytes.Buffer
	w, err := archive.NewWriter(&buf, archive.Format11)
	require.NoError(t, err)
	add := func(u *unstructured.Unstructured, resource string, preferred bool) {
		require.NoError(t, w.Add(u, resource, preferred))
	}
	c := crd("x.io", "widgets", ver("v1alpha1", true, false), ver("v1beta1", true, true), ver("v1", true, false))
	c.TypeMeta = metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
	c.UID = "uid-crd"
	raw, _ := json.Marshal(c)
	var crdObj unstructured.Unstructured
	require.NoError(t, crdObj.UnmarshalJSON(raw))
	add(&crdObj, "customresourcedefinitions", true)

	add(obj("x.io/v1beta1", "Widget", "ns", "w"), "widgets", true)
	add(obj("x.io/v1alpha1", "Widget", "ns", "w"), "widgets", false)
	add(obj("apps/v1", "Deployment", "ns", "d"), "deployments", true)
	add(obj("apps/v1beta2", "Deployment", "ns", "d"), "deployments", false)
	add(obj("v1", "Pod", "ns", "p"), "pods", true)
	add(obj("flowcontrol.apiserver.k8s.io/v1beta1", "FlowSchema", "", "f"), "flowschemas", true)
	add(obj("y.io/v1", "Gadget", "ns", "g"), "gadgets", true)
	require.NoError(t, w.Close())
	b, err := archive.Read(context.Background(), &buf, archive.Options{})
	require.NoError(t, err)
	return b
}

func testTarget() stubDiscovery {
	return stubDiscovery{
		groups: []*metav1.APIGroup{group("", "v1", "v1"), group("apps", "v1", "v1"), group("apiextensions.k8s.io", "v1", "v1"),
			group("flowcontrol.apiserver.k8s.io", "v1", "v1", "v1beta3")},
		lists: []*metav1.APIResourceList{
			list("v1", "pods"), list("apps/v1", "deployments"), list("apiextensions.k8s.io/v1", "customresourcedefinitions"),
			list("flowcontrol.apiserver.k8s.io/v1", "flowschemas"), list("flowcontrol.apiserver.k8s.io/v1beta3", "flowschemas"),
		},
	}
}

func TestPlanBackup(t *testing.T) {
	b := testBackup(t)
	plan, warn, err := PlanBackup(context.Background(), b, testTarget(), Options{})
	require.NoError(t, err)
	require.NoError(t, warn)

	type want struct {
		version, dir string
		rule         Rule
		fromCRD      string
	}
	for gr, w := range map[schema.GroupResource]want{
		{Group: "x.io", Resource: "widgets"}:                                   {"v1beta1", "v1beta1-preferredversion", RuleSourcePreferred, "widgets.x.io"},
		{Group: "apps", Resource: "deployments"}:                               {"v1", "v1-preferredversion", RuleTargetPreferred, ""},
		{Resource: "pods"}:                                                     {"v1", "v1-preferredversion", RuleTargetPreferred, ""},
		{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: {"v1", "v1-preferredversion", RuleTargetPreferred, ""},
		{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas"}:       {"v1beta1", "v1beta1-preferredversion", RuleNoCommonVersion, ""},
		{Group: "y.io", Resource: "gadgets"}:                                   {"v1", "v1-preferredversion", RuleNotServed, ""},
	} {
		c, ok := plan.For(gr)
		require.True(t, ok, gr)
		assert.Equal(t, w, want{c.Version, b.Dir(gr, c.Version), c.Rule, c.TargetFromCRD}, gr.String())
	}
	widgets, _ := plan.For(schema.GroupResource{Group: "x.io", Resource: "widgets"})
	assert.Equal(t, []string{"v1", "v1beta1", "v1alpha1"}, widgets.TargetVersions, "the CRD's served versions, highest first")
	assert.Equal(t, "v1", widgets.TargetPreferred)

	var notRestorable []string
	for _, c := range plan.NotRestorable() {
		notRestorable = append(notRestorable, c.GroupResource.String())
	}
	assert.Equal(t, []string{"flowschemas.flowcontrol.apiserver.k8s.io", "gadgets.y.io"}, notRestorable)

	// Every choice can be read from the archive at the directory it names.
	for _, c := range plan.Choices {
		res, _ := b.Resource(c.GroupResource)
		assert.Contains(t, res.Versions, c.Version)
	}
}

func TestPlanUserPrioritiesAndStrict(t *testing.T) {
	b := testBackup(t)
	prio := Priorities{{Group: "apps", Resource: "deployments"}: {"v2", "v1beta2"}}
	plan, _, err := PlanBackup(context.Background(), b, testTarget(), Options{Priorities: prio})
	require.NoError(t, err)
	c, _ := plan.For(schema.GroupResource{Group: "apps", Resource: "deployments"})
	// v1beta2 is in the backup but the target does not serve it: P0 does not apply.
	assert.Equal(t, RuleTargetPreferred, c.Rule)

	target := testTarget()
	target.lists = append(target.lists, list("apps/v1beta2", "deployments"))
	plan, _, err = PlanBackup(context.Background(), b, target, Options{Priorities: prio})
	require.NoError(t, err)
	c, _ = plan.For(schema.GroupResource{Group: "apps", Resource: "deployments"})
	assert.Equal(t, RuleUserPriority, c.Rule)
	assert.Equal(t, "v1beta2", c.Version)
	assert.Equal(t, "v1beta2", b.Dir(c.GroupResource, c.Version))

	plan, _, err = PlanBackup(context.Background(), b, testTarget(), Options{Strict: true})
	var nc *NoCommonVersionError
	require.ErrorAs(t, err, &nc)
	require.Len(t, nc.Choices, 1)
	assert.Equal(t, "flowschemas.flowcontrol.apiserver.k8s.io", nc.Choices[0].GroupResource.String())
	assert.Contains(t, err.Error(), "backup [v1beta1], target [v1 v1beta3]")
	assert.NotNil(t, plan, "the plan comes back beside the error, for reporting")
}

func TestInvalidCRDInTheBackupIsReportedAsInvalid(t *testing.T) {
	var buf bytes.Buffer
	w, err := archive.NewWriter(&buf, archive.Format11)
	require.NoError(t, err)
	twoStorage := crd("z.io", "things", ver("v1", true, true), ver("v2", true, true))
	twoStorage.TypeMeta = metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
	twoStorage.UID = "uid-things"
	raw, _ := json.Marshal(twoStorage)
	var u unstructured.Unstructured
	require.NoError(t, u.UnmarshalJSON(raw))
	require.NoError(t, w.Add(&u, "customresourcedefinitions", true))
	require.NoError(t, w.Add(obj("z.io/v1", "Thing", "ns", "t"), "things", true))
	// A CRD whose spec is not a CRD's at all.
	bad := obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "bads.q.io")
	bad.Object["spec"] = "not an object"
	require.NoError(t, w.Add(bad, "customresourcedefinitions", true))
	require.NoError(t, w.Add(obj("q.io/v1", "Bad", "ns", "b"), "bads", true))
	require.NoError(t, w.Close())
	b, err := archive.Read(context.Background(), &buf, archive.Options{})
	require.NoError(t, err)

	plan, _, err := PlanBackup(context.Background(), b, testTarget(), Options{})
	require.NoError(t, err, "an invalid CRD does not stop the plan")
	things, _ := plan.For(schema.GroupResource{Group: "z.io", Resource: "things"})
	assert.Equal(t, RuleNotServed, things.Rule)
	assert.Contains(t, things.Explain(), "the backup's CRD for it is invalid: things.z.io")
	assert.Contains(t, things.Explain(), "2 versions are marked storage")
	bads, _ := plan.For(schema.GroupResource{Group: "q.io", Resource: "bads"})
	assert.Equal(t, RuleNotServed, bads.Rule)
	assert.Contains(t, bads.Explain(), "the backup's CRD for it is invalid: bads.q.io")
	assert.NotContains(t, bads.Explain(), "carries no CRD")
}
