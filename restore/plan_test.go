package restore

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/plugin"
	"github.com/restoregraph/restoregraph/versionselect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"
)

var (
	widgets = schema.GroupResource{Group: "example.io", Resource: "widgets"}
	crdGVR  = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// widgetBackup holds namespaces a and b, a widget in each at v1 and v2 (v2 the source's
// preferred), and a ConfigMap in a; extra objects are added as they are.
func widgetBackup(t *testing.T, extra ...map[string]any) *archive.Backup {
	t.Helper()
	var buf bytes.Buffer
	w, err := archive.NewWriter(&buf, archive.Format11)
	require.NoError(t, err)
	add := func(o map[string]any, resource string, preferred bool) {
		require.NoError(t, w.Add(&unstructured.Unstructured{Object: o}, resource, preferred))
	}
	for _, ns := range []string{"a", "b"} {
		add(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns, "uid": "ns-" + ns}}, "namespaces", true)
		for _, v := range []string{"v1", "v2"} {
			add(map[string]any{"apiVersion": "example.io/" + v, "kind": "Widget",
				"metadata": map[string]any{"name": "w", "namespace": ns, "uid": "w-" + ns}, "spec": map[string]any{"size": int64(3)}}, "widgets", v == "v2")
		}
	}
	add(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "settings", "namespace": "a", "uid": "cm-a"},
		"data": map[string]any{"colour": "blue"}}, "configmaps", true)
	for _, o := range extra {
		u := &unstructured.Unstructured{Object: o}
		add(o, strings.ToLower(u.GetKind())+"s", true)
	}
	require.NoError(t, w.Close())
	b, err := archive.Read(context.Background(), &buf, archive.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b
}

// widgetCRD is the target's Widget CRD, serving the versions named, with a status
// subresource.
func widgetCRD(served ...string) *unstructured.Unstructured {
	var versions []any
	for _, v := range []string{"v1", "v2"} {
		versions = append(versions, map[string]any{"name": v, "served": slices.Contains(served, v), "storage": v == served[len(served)-1],
			"schema":       map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			"subresources": map[string]any{"status": map[string]any{}}})
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.io"},
		"spec": map[string]any{"group": "example.io", "scope": "Namespaced", "versions": versions,
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"}}}}
}

// widgetTarget is a cluster whose Widget CRD serves v1 and v2.
func widgetTarget(t *testing.T) Target {
	_, tgt := cluster(t, memcluster.Options{})
	_, err := tgt.Dynamic.Resource(crdGVR).Create(context.Background(), widgetCRD("v1", "v2"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, lists, err := tgt.Discovery.ServerGroupsAndResources()
		return err == nil && slices.ContainsFunc(lists, func(l *metav1.APIResourceList) bool { return l.GroupVersion == "example.io/v2" })
	}, 5*time.Second, 10*time.Millisecond)
	return tgt
}

// saveAndRead writes p as plan -o json does and reads it back.
func saveAndRead(t *testing.T, p *Plan) *SavedPlan {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, p.WriteJSON(&buf))
	s, err := ReadPlan(&buf)
	require.NoError(t, err)
	return s
}

// A plan saved, read back and applied restores exactly the saved objects, at the saved
// versions, with the saved selection: a filter and a version priority the reader of the
// plan never passes again.
func TestSavedPlanIsAppliedAsSaved(t *testing.T) {
	ctx := context.Background()
	b, tgt := widgetBackup(t), widgetTarget(t)
	p, err := NewPlan(ctx, b, tgt, PlanOptions{BackupName: "widgets", Selection: Selection{
		Filter:     filter.Spec{IncludeNamespaces: []string{"a"}},
		Priorities: versionselect.Priorities{widgets: {"v1"}},
	}})
	require.NoError(t, err)
	saved := saveAndRead(t, p)
	assert.Equal(t, "widgets", saved.Backup.Name)
	assert.Equal(t, []string{"a"}, saved.Selection.Filter.IncludeNamespaces)

	opened, err := saved.Open(ctx, b, tgt, Extensions{})
	require.NoError(t, err)
	rep, err := Apply(ctx, opened, tgt, RunOptions{Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK())

	planned := map[types.UID]PlannedObject{}
	for _, o := range saved.Objects {
		planned[o.UID] = o
	}
	restored := 0
	for o := range rep.Objects() {
		want, ok := planned[o.UID]
		require.True(t, ok, "%s was not in the saved plan", o.UID)
		delete(planned, o.UID)
		assert.Equal(t, want.Version, o.Version, "%s at the saved version", o.UID)
		if want.Excluded != "" {
			assert.Equal(t, Skipped, o.Status, "%s was left out in the plan", o.UID)
			continue
		}
		assert.Equal(t, Restored, o.Status, "%s", o.UID)
		restored++
	}
	assert.Empty(t, planned, "every saved object is in the report")
	assert.Equal(t, 3, restored, "namespace a, its widget and its ConfigMap")
	w, err := tgt.Dynamic.Resource(widgets.WithVersion("v1")).Namespace("a").Get(ctx, "w", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "example.io/v1", w.GetAPIVersion())
	_, err = tgt.Dynamic.Resource(widgets.WithVersion("v1")).Namespace("b").Get(ctx, "w", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "namespace b was filtered out in the plan: %v", err)
}

// A plan opened with another backup is refused, with what changed, and nothing is
// written.
func TestSwappedBackupIsRefused(t *testing.T) {
	ctx := context.Background()
	tgt := widgetTarget(t)
	p, err := NewPlan(ctx, widgetBackup(t), tgt, PlanOptions{})
	require.NoError(t, err)
	saved := saveAndRead(t, p)

	other := widgetBackup(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "late", "namespace": "b", "uid": "cm-late"}})
	_, err = saved.Open(ctx, other, tgt, Extensions{})
	require.ErrorIs(t, err, ErrPlanChanged)
	var changed *PlanChangedError
	require.ErrorAs(t, err, &changed)
	assert.Contains(t, changed.Changes[0], "the backup is not the one planned")
	assert.Contains(t, changed.Changes, "object configmaps b/late at v1 (uid cm-late) was not planned")

	_, err = tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(ctx, "a", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "nothing restored: %v", err)
}

// A plan whose version the target stops serving between plan and apply is refused, in
// memory (Apply) and read back (Open), with what changed.
func TestRemovedVersionIsRefused(t *testing.T) {
	ctx := context.Background()
	b, tgt := widgetBackup(t), widgetTarget(t)
	p, err := NewPlan(ctx, b, tgt, PlanOptions{})
	require.NoError(t, err)
	choice, _ := p.versions.For(widgets)
	require.Equal(t, "v2", choice.Version)
	saved := saveAndRead(t, p)

	crd, err := tgt.Dynamic.Resource(crdGVR).Get(ctx, "widgets.example.io", metav1.GetOptions{})
	require.NoError(t, err)
	without := widgetCRD("v1")
	without.SetResourceVersion(crd.GetResourceVersion())
	_, err = tgt.Dynamic.Resource(crdGVR).Update(ctx, without, metav1.UpdateOptions{})
	require.NoError(t, err)

	rep, err := Apply(ctx, p, tgt, RunOptions{Retry: fastRetry})
	assert.Nil(t, rep)
	var changed *PlanChangedError
	require.ErrorAs(t, err, &changed)
	assert.Equal(t, []string{"widgets.example.io: planned at v2, it would now be v1: " + func() string {
		now, _, err := versionselect.PlanBackup(ctx, b, tgt.Discovery, versionselect.Options{})
		require.NoError(t, err)
		c, _ := now.For(widgets)
		return c.Explain()
	}()}, changed.Changes)
	applied := changed.Changes

	_, err = saved.Open(ctx, b, tgt, Extensions{})
	require.ErrorAs(t, err, &changed)
	assert.Equal(t, []string{applied[0], "object widgets.example.io a/w at v1 was planned as widgets.example.io a/w at v2",
		"object widgets.example.io b/w at v1 was planned as widgets.example.io b/w at v2"}, changed.Changes)

	_, err = tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(ctx, "a", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "nothing restored: %v", err)
}

// A step added through the extensions changes what is restored and what Verify expects
// alike.
func TestAddedStepChangesRestoreAndVerify(t *testing.T) {
	ctx := context.Background()
	b, tgt := widgetBackup(t), widgetTarget(t)
	stamp := func(steps []Step) []Step {
		i := slices.IndexFunc(steps, func(s Step) bool { return s.Name == StepSanitize })
		return slices.Insert(steps, i+1, Step{Name: "stamp", Run: func(_ context.Context, o *Object) error {
			if o.Item.Kind == "ConfigMap" {
				return unstructured.SetNestedField(o.Body.Object, "red", "data", "colour")
			}
			return nil
		}})
	}
	p, err := NewPlan(ctx, b, tgt, PlanOptions{Extensions: Extensions{Steps: stamp}})
	require.NoError(t, err)
	rep, err := Apply(ctx, p, tgt, RunOptions{Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK())
	cm, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("a").Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"colour": "red"}, cm.Object["data"], "the step changed the restore")

	v, err := Verify(ctx, p, tgt, RunOptions{Retry: fastRetry})
	require.NoError(t, err)
	assert.True(t, v.OK(), "verified against the same pipeline: %+v", v.Summary)

	plain, err := NewPlan(ctx, b, tgt, PlanOptions{})
	require.NoError(t, err)
	v, err = Verify(ctx, plain, tgt, RunOptions{Retry: fastRetry})
	require.NoError(t, err)
	assert.Equal(t, 1, v.Summary[Differs], "without the step, what was restored is not what the restore makes")
	for _, o := range v.Objects {
		if o.Verdict == Differs {
			assert.Equal(t, "settings", o.Name)
			assert.Equal(t, []string{"data.colour: want blue, the target has red"}, o.Problems)
		}
	}
}

// refusing answers the creation of the objects it names with what it names: an error,
// or a wait until the request's context ends.
type refusing struct {
	dynamic.Interface
	refuse map[string]error // by name; errHang: wait
}

var errHang = errors.New("hang")

func (r refusing) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return refusingResource{r.Interface.Resource(gvr), r, gvr}
}

type refusingResource struct {
	dynamic.NamespaceableResourceInterface
	r   refusing
	gvr schema.GroupVersionResource
}

func (rr refusingResource) Namespace(ns string) dynamic.ResourceInterface {
	return refusingNamespaced{rr.NamespaceableResourceInterface.Namespace(ns), rr.r}
}

type refusingNamespaced struct {
	dynamic.ResourceInterface
	r refusing
}

func (rn refusingNamespaced) Create(ctx context.Context, obj *unstructured.Unstructured, opts metav1.CreateOptions, sub ...string) (*unstructured.Unstructured, error) {
	switch err := rn.r.refuse[obj.GetName()]; {
	case err == errHang:
		<-ctx.Done()
		return nil, ctx.Err()
	case err != nil:
		return nil, err
	}
	return rn.ResourceInterface.Create(ctx, obj, opts, sub...)
}

// Every kind of failure reaches the report as a typed error, with its data.
func TestTypedErrorsReachTheReport(t *testing.T) {
	ctx := context.Background()
	cm := func(name string, owner ...string) map[string]any {
		md := map[string]any{"name": name, "namespace": "n", "uid": "uid-" + name}
		if len(owner) > 0 {
			md["ownerReferences"] = []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": owner[0], "uid": "uid-" + owner[0]}}
		}
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}
	}
	var buf bytes.Buffer
	w, err := archive.NewWriter(&buf, archive.Format11)
	require.NoError(t, err)
	objs := []map[string]any{{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "n", "uid": "uid-n"}},
		cm("forbidden"), cm("invalid"), cm("conflict"), cm("slow"), cm("plugin-fails"), cm("owned", "forbidden"), cm("fine")}
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o}
		require.NoError(t, w.Add(u, strings.ToLower(u.GetKind())+"s", true))
	}
	require.NoError(t, w.AddJSON(archive.Entry{APIVersion: "rbac.authorization.k8s.io/v1", Resource: "clusterroles", Name: "exists"},
		[]byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"exists","uid":"uid-exists"}}`), true))
	require.NoError(t, w.Close())
	b, err := archive.Read(context.Background(), &buf, archive.Options{})
	require.NoError(t, err)
	defer b.Close()

	_, tgt := cluster(t, memcluster.Options{})
	_, err = tgt.Dynamic.Resource(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}).
		Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
			"metadata": map[string]any{"name": "exists"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cmGK := schema.GroupKind{Kind: "ConfigMap"}
	causes := field.ErrorList{field.Invalid(field.NewPath("data", "colour"), "ultraviolet", "not a colour")}
	tgt.Dynamic = refusing{Interface: tgt.Dynamic, refuse: map[string]error{
		"forbidden": apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "forbidden", errors.New("not you")),
		"invalid":   apierrors.NewInvalid(cmGK, "invalid", causes),
		"conflict":  apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "conflict", errors.New("changed")),
		"slow":      errHang,
	}}
	var reg plugin.Registry
	require.NoError(t, reg.Register("example.io/fails", plugin.V1, failOn{"ConfigMap", "plugin-fails"}))

	p, err := NewPlan(ctx, b, tgt, PlanOptions{Selection: Selection{Existing: Fail}, Extensions: Extensions{Plugins: &reg}})
	require.NoError(t, err)
	rep, err := Apply(ctx, p, tgt, RunOptions{Retry: fastRetry, ItemTimeout: 500 * time.Millisecond})
	require.NoError(t, err)
	errs := map[string]error{}
	for o := range rep.Objects() {
		errs[o.Name] = o.Err
		if o.Err != nil {
			assert.Equal(t, o.Err.Error(), o.Reason, "the reason is the error's message")
		}
	}
	assert.NoError(t, errs["fine"])
	assert.True(t, apierrors.IsForbidden(errs["forbidden"]), "%v", errs["forbidden"])
	assert.True(t, apierrors.IsInvalid(errs["invalid"]), "%v", errs["invalid"])
	var status apierrors.APIStatus
	require.ErrorAs(t, errs["invalid"], &status)
	require.Len(t, status.Status().Details.Causes, 1)
	assert.Equal(t, "data.colour", status.Status().Details.Causes[0].Field)
	assert.True(t, apierrors.IsConflict(errs["conflict"]), "%v", errs["conflict"])
	assert.True(t, apierrors.IsAlreadyExists(errs["exists"]), "the Fail policy: %v", errs["exists"])
	assert.ErrorIs(t, errs["slow"], ErrItemTimeout)
	var step *StepError
	require.ErrorAs(t, errs["slow"], &step)
	assert.Equal(t, StepCreate, step.Step)
	var pe *PluginError
	require.ErrorAs(t, errs["plugin-fails"], &pe)
	assert.Equal(t, "example.io/fails", pe.Plugin)
	require.ErrorAs(t, errs["plugin-fails"], &step)
	assert.Equal(t, StepActions, step.Step)
	assert.ErrorIs(t, errs["owned"], ErrBlocked)
	var blocked *BlockedError
	require.ErrorAs(t, errs["owned"], &blocked)
	assert.Equal(t, types.UID("uid-forbidden"), blocked.By)
	assert.Equal(t, []types.UID{"uid-forbidden", "uid-owned"}, blocked.Chain)
}

// An object the journal says an earlier run restored goes through the pipeline's own
// ready step, as the caller wrapped it, and through no step between.
func TestJournaledObjectsSkipToTheReadyStep(t *testing.T) {
	ctx := context.Background()
	_, tgt := cluster(t, memcluster.Options{})
	path := t.TempDir() + "/journal"
	journal := openJournal(t, path)
	_, err := Run(ctx, smallBackup(t), tgt, PlanOptions{}, RunOptions{Journal: journal, Retry: fastRetry})
	require.NoError(t, err)
	require.NoError(t, journal.Close())
	journal = openJournal(t, path) // as a run started again reads it
	defer journal.Close()

	ran := map[StepName]int{}
	count := func(steps []Step) []Step {
		for i, s := range steps {
			run := s.Run
			steps[i].Run = func(ctx context.Context, o *Object) error {
				ran[s.Name]++ // one worker: Workers 1
				return run(ctx, o)
			}
		}
		return steps
	}
	rep, err := Run(ctx, smallBackup(t), tgt, PlanOptions{Extensions: Extensions{Steps: count}}, RunOptions{Journal: journal, Retry: fastRetry, Workers: 1})
	require.NoError(t, err)
	require.True(t, rep.OK())
	for o := range rep.Objects() {
		assert.True(t, o.FromJournal, "%s", o.Name)
		assert.False(t, o.Ready.IsZero(), "%s was waited for", o.Name)
	}
	assert.Equal(t, map[StepName]int{StepJournal: 3, StepReady: 3}, ran)
}

// The StatefulSet of the real backup waits for its claim, so that its controller does
// not make the claim from its template first; the rule can be switched off by name.
func TestStatefulSetWaitsForItsClaims(t *testing.T) {
	ctx := context.Background()
	b := shop(t)
	dependsOn := func(sel Selection) []string {
		p, err := NewPlan(ctx, b, shopTarget(t), PlanOptions{Selection: sel})
		require.NoError(t, err)
		var out []string
		for o := range p.Objects() {
			if o.Resource == "statefulsets" && o.Name == "db" {
				for _, d := range o.DependsOn {
					ref, _ := p.Object(d.UID)
					out = append(out, ref.Resource+"/"+ref.Name+" ("+d.Reason+")")
				}
			}
		}
		return out
	}
	assert.Contains(t, dependsOn(Selection{}), "persistentvolumeclaims/data-db-0 (statefulset-claims)")
	assert.NotContains(t, dependsOn(Selection{Disabled: Disabled{Rules: []Rule{StatefulSetClaims}}}), "persistentvolumeclaims/data-db-0 (statefulset-claims)")
}
