// Package contract is the behaviour restoregraph relies on from a Kubernetes API
// server, written as tests in client-go terms. The unit tests run it against memcluster;
// the integration tests run the same suite against a real kube-apiserver, so that every
// place where memcluster differs from the real thing shows up.
package contract

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	recorded "github.com/restoregraph/restoregraph/memcluster/discovery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Options say what the server under test runs beside the API server.
type Options struct {
	// GC: a garbage collector runs (kube-controller-manager's, or memcluster's).
	GC bool
	// Timeout bounds every wait for an asynchronous effect; default 30s.
	Timeout time.Duration
	// ServiceCIDR is the server's Service range (--service-cluster-ip-range);
	// default 10.0.0.0/24, memcluster's and the integration cluster's.
	ServiceCIDR string
	// VolumeBinder: claims and volumes that name each other are bound
	// (kube-controller-manager's persistentvolume-binder, or memcluster's BindVolumes).
	VolumeBinder bool
}

var (
	namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	configmaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	crds       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

type suite struct {
	cfg     *rest.Config
	client  dynamic.Interface
	disc    discovery.DiscoveryInterface
	opts    Options
	ns      string
	timeout time.Duration
}

// Run runs the contract against the server of cfg. Each run works in namespaces and
// CRDs of its own, named after prefix, so runs do not disturb each other.
func Run(t *testing.T, cfg *rest.Config, prefix string, opts Options) {
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.ServiceCIDR == "" {
		opts.ServiceCIDR = "10.0.0.0/24"
	}
	s := &suite{cfg: cfg, opts: opts, timeout: opts.Timeout, ns: prefix + "-contract"}
	var err error
	s.client, err = dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	s.disc, err = discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	s.createNamespace(t, s.ns)

	t.Run("Discovery", s.discovery)
	t.Run("BuiltinResources", s.builtinResources)
	t.Run("CRUD", s.crud)
	t.Run("Errors", s.errors)
	t.Run("Patch", s.patch)
	t.Run("ManagedFields", s.managedFields)
	t.Run("Watch", s.watch)
	t.Run("CustomResources", func(t *testing.T) { s.customResources(t, prefix) })
	t.Run("Namespaces", s.namespaceLifecycle)
	t.Run("ServiceAllocation", s.serviceAllocation)
	t.Run("JobSelector", s.jobSelector)
	t.Run("PodUpdates", s.podUpdates)
	t.Run("Paging", s.paging)
	if opts.GC {
		t.Run("GarbageCollection", s.garbageCollection)
	}
	if opts.VolumeBinder {
		t.Run("VolumeBinding", s.volumeBinding)
	}
}

func (s *suite) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	t.Cleanup(cancel)
	return ctx
}

func obj(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func (s *suite) createNamespace(t *testing.T, name string) {
	_, err := s.client.Resource(namespaces).Create(s.ctx(t), obj("v1", "Namespace", "", name, nil), metav1.CreateOptions{})
	require.NoError(t, err)
	s.eventually(t, "namespace "+name+" Active", func() bool {
		ns, err := s.client.Resource(namespaces).Get(s.ctx(t), name, metav1.GetOptions{})
		phase, _, _ := unstructured.NestedString(ns.Object, "status", "phase")
		return err == nil && phase == "Active"
	})
}

func (s *suite) eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(s.timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", s.timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *suite) discovery(t *testing.T) {
	groups, lists, err := s.disc.ServerGroupsAndResources()
	require.NoError(t, err)
	var names []string
	for _, g := range groups {
		names = append(names, g.Name)
		require.NotEmpty(t, g.Versions)
		assert.Equal(t, g.Versions[0], g.PreferredVersion, "group %q: the preferred version comes first", g.Name)
	}
	assert.Contains(t, names, "apps")
	served := map[string]bool{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			served[l.GroupVersion+"/"+r.Name] = true
		}
	}
	for _, want := range []string{"v1/namespaces", "v1/configmaps", "v1/secrets", "v1/pods", "apps/v1/deployments", "apiextensions.k8s.io/v1/customresourcedefinitions"} {
		assert.True(t, served[want], want)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(s.disc))
	m, err := mapper.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"})
	require.NoError(t, err)
	assert.Equal(t, "deployments", m.Resource.Resource)
	assert.Equal(t, "namespace", string(m.Scope.Name()))
}

// builtinResources: the server serves every built-in resource the recorded
// kube-apiserver serves, at the same versions, with the same kind, scope, verbs and
// preferred version. Resources it serves beyond the recording (CRDs) are not looked at.
func (s *suite) builtinResources(t *testing.T) {
	groups, err := s.disc.ServerGroups()
	require.NoError(t, err)
	preferred := map[string]string{}
	for _, g := range groups.Groups {
		preferred[g.Name] = g.PreferredVersion.Version
	}
	_, lists, err := s.disc.ServerGroupsAndResources()
	require.NoError(t, err)
	rec := recorded.KubeAPIServer()
	got := map[string]recorded.Resource{}
	for _, r := range recorded.Record(rec.Server, groups, lists).Resources {
		got[r.Group+"/"+r.Version+"/"+r.Resource] = r
	}
	for _, want := range rec.Resources {
		name := want.Group + "/" + want.Version + "/" + want.Resource
		have, ok := got[name]
		if !assert.True(t, ok, "%s is served (recorded from %s)", name, rec.Server) {
			continue
		}
		assert.Equal(t, want.Kind, have.Kind, name)
		assert.Equal(t, want.Namespaced, have.Namespaced, name)
		assert.Equal(t, want.Verbs, have.Verbs, name)
		assert.Equal(t, want.Preferred, preferred[want.Group] == want.Version, "%s is its group's preferred version", name)
	}
}

func (s *suite) crud(t *testing.T) {
	ctx := s.ctx(t)
	cms := s.client.Resource(configmaps).Namespace(s.ns)
	cm := obj("v1", "ConfigMap", s.ns, "crud", map[string]any{"data": map[string]any{"k": "v"}})
	cm.SetLabels(map[string]string{"app": "contract"})
	created, err := cms.Create(ctx, cm, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, created.GetUID())
	assert.NotEmpty(t, created.GetResourceVersion())
	ts := created.GetCreationTimestamp()
	assert.False(t, ts.IsZero())

	got, err := cms.Get(ctx, "crud", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, created.GetUID(), got.GetUID())
	assert.Equal(t, "v", got.Object["data"].(map[string]any)["k"])

	other := obj("v1", "ConfigMap", s.ns, "crud-other", nil)
	_, err = cms.Create(ctx, other, metav1.CreateOptions{})
	require.NoError(t, err)
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "app=contract"})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "crud", list.Items[0].GetName())
	assert.NotEmpty(t, list.GetResourceVersion())
	// A readiness wait lists and watches one object by its name.
	for _, c := range []struct {
		label string
		want  []string
	}{{"", []string{"crud-other"}}, {"app=contract", nil}} {
		list, err = cms.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=crud-other", LabelSelector: c.label})
		require.NoError(t, err)
		var names []string
		for _, it := range list.Items {
			names = append(names, it.GetName())
		}
		assert.Equal(t, c.want, names, "by name, with label selector %q", c.label)
	}
	list, err = s.client.Resource(namespaces).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + s.ns})
	require.NoError(t, err)
	require.Len(t, list.Items, 1, "a cluster-scoped object by its name")
	assert.Equal(t, s.ns, list.Items[0].GetName())

	got.Object["data"] = map[string]any{"k": "v2"}
	updated, err := cms.Update(ctx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, got.GetResourceVersion(), updated.GetResourceVersion())
	assert.Equal(t, created.GetUID(), updated.GetUID(), "the UID never changes")

	_, err = cms.Update(ctx, got, metav1.UpdateOptions{}) // got carries the old resourceVersion
	assert.True(t, apierrors.IsConflict(err), "a stale resourceVersion conflicts: %v", err)

	require.NoError(t, cms.Delete(ctx, "crud", metav1.DeleteOptions{}))
	_, err = cms.Get(ctx, "crud", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	err = cms.Delete(ctx, "crud", metav1.DeleteOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)

	uid := types.UID("00000000-0000-0000-0000-000000000000")
	err = cms.Delete(ctx, "crud-other", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	assert.True(t, apierrors.IsConflict(err), "a delete whose UID precondition fails conflicts: %v", err)

	// Admission removes an expired Lease only as it saw it: one renewed since stays.
	seen, err := cms.Create(ctx, obj("v1", "ConfigMap", s.ns, "crud-renewed", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	seen.Object["data"] = map[string]any{"renewed": "yes"}
	renewed, err := cms.Update(ctx, seen.DeepCopy(), metav1.UpdateOptions{})
	require.NoError(t, err)
	uid, stale := seen.GetUID(), seen.GetResourceVersion()
	err = cms.Delete(ctx, "crud-renewed", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &stale}})
	assert.True(t, apierrors.IsConflict(err), "a delete whose resourceVersion precondition is stale conflicts: %v", err)
	current := renewed.GetResourceVersion()
	require.NoError(t, cms.Delete(ctx, "crud-renewed", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &current}}))
}

func (s *suite) errors(t *testing.T) {
	ctx := s.ctx(t)
	cms := s.client.Resource(configmaps).Namespace(s.ns)
	_, err := cms.Create(ctx, obj("v1", "ConfigMap", s.ns, "dup", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cms.Create(ctx, obj("v1", "ConfigMap", s.ns, "dup", nil), metav1.CreateOptions{})
	assert.True(t, apierrors.IsAlreadyExists(err), "%v", err)

	_, err = cms.Create(ctx, obj("v1", "ConfigMap", s.ns, "", nil), metav1.CreateOptions{})
	assert.True(t, apierrors.IsInvalid(err), "no name is invalid: %v", err)

	gen := obj("v1", "ConfigMap", s.ns, "", nil)
	gen.SetGenerateName("gen-")
	made, err := cms.Create(ctx, gen, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Regexp(t, "^gen-.+", made.GetName())

	_, err = s.client.Resource(configmaps).Namespace(s.ns+"-missing").Create(ctx, obj("v1", "ConfigMap", s.ns+"-missing", "x", nil), metav1.CreateOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a namespace that does not exist: %v", err)

	_, err = s.client.Resource(schema.GroupVersionResource{Group: "nowhere.example.io", Version: "v1", Resource: "widgets"}).Namespace(s.ns).Get(ctx, "x", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a resource that is not served: %v", err)
}

func (s *suite) patch(t *testing.T) {
	ctx := s.ctx(t)
	cms := s.client.Resource(configmaps).Namespace(s.ns)
	_, err := cms.Create(ctx, obj("v1", "ConfigMap", s.ns, "patch", map[string]any{"data": map[string]any{"a": "1", "b": "2"}}), metav1.CreateOptions{})
	require.NoError(t, err)

	merged, err := cms.Patch(ctx, "patch", types.MergePatchType, []byte(`{"data":{"a":"10","b":null},"metadata":{"labels":{"p":"m"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a": "10"}, merged.Object["data"])
	assert.Equal(t, "m", merged.GetLabels()["p"])

	patched, err := cms.Patch(ctx, "patch", types.JSONPatchType, []byte(`[{"op":"add","path":"/data/c","value":"3"},{"op":"remove","path":"/data/a"}]`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"c": "3"}, patched.Object["data"])

	_, err = cms.Patch(ctx, "patch", types.JSONPatchType, []byte(`[{"op":"test","path":"/data/c","value":"nope"}]`), metav1.PatchOptions{})
	assert.Error(t, err, "a failed JSON patch test is an error")
	_, err = cms.Patch(ctx, "missing", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

// managedFields: a merge patch of metadata.managedFields, after a create, leaves the
// object with exactly those: how a restore gives back the backup's.
func (s *suite) managedFields(t *testing.T) {
	ctx := s.ctx(t)
	cms := s.client.Resource(configmaps).Namespace(s.ns)
	_, err := cms.Create(ctx, obj("v1", "ConfigMap", s.ns, "fields", map[string]any{"data": map[string]any{"a": "1"}}), metav1.CreateOptions{FieldManager: "restorer"})
	require.NoError(t, err)
	recorded := []any{map[string]any{
		"manager": "helm", "operation": "Apply", "apiVersion": "v1", "time": "2026-01-02T03:04:05Z",
		"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:data": map[string]any{"f:a": map[string]any{}}},
	}}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"managedFields": recorded}})
	require.NoError(t, err)
	_, err = cms.Patch(ctx, "fields", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "restorer"})
	require.NoError(t, err)
	got, err := cms.Get(ctx, "fields", metav1.GetOptions{})
	require.NoError(t, err)
	md, _ := got.Object["metadata"].(map[string]any)
	assert.Equal(t, recorded, md["managedFields"], "the managed fields patched, and nothing else")
}

func (s *suite) watch(t *testing.T) {
	ctx := s.ctx(t)
	cms := s.client.Resource(configmaps).Namespace(s.ns)
	list, err := cms.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion(), LabelSelector: "watch=me"})
	require.NoError(t, err)
	defer w.Stop()

	c := obj("v1", "ConfigMap", s.ns, "watched", nil)
	c.SetLabels(map[string]string{"watch": "me"})
	created, err := cms.Create(ctx, c, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cms.Create(ctx, obj("v1", "ConfigMap", s.ns, "unwatched", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	created.Object["data"] = map[string]any{"x": "y"}
	updated, err := cms.Update(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, cms.Delete(ctx, "watched", metav1.DeleteOptions{}))

	var got []watch.EventType
	timeout := time.After(s.timeout)
	for len(got) < 3 {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(t, ok, "the watch ended early")
			u := ev.Object.(*unstructured.Unstructured)
			assert.Equal(t, "watched", u.GetName(), "the label selector filters events")
			got = append(got, ev.Type)
			if ev.Type == watch.Deleted {
				// The object as it was deleted: its UID, labels and data, the last written.
				assert.Equal(t, updated.GetUID(), u.GetUID())
				assert.Equal(t, updated.GetLabels(), u.GetLabels())
				assert.Equal(t, updated.Object["data"], u.Object["data"])
			}
		case <-timeout:
			t.Fatalf("events so far: %v", got)
		}
	}
	assert.Equal(t, []watch.EventType{watch.Added, watch.Modified, watch.Deleted}, got)

	// Relabelled out of the selector: DELETED, with the object as it was; relabelled back
	// in: ADDED.
	mover := obj("v1", "ConfigMap", s.ns, "mover", nil)
	mover.SetLabels(map[string]string{"watch": "me"})
	mover, err = cms.Create(ctx, mover, metav1.CreateOptions{})
	require.NoError(t, err)
	mover.SetLabels(map[string]string{"watch": "not-me"})
	mover, err = cms.Update(ctx, mover, metav1.UpdateOptions{})
	require.NoError(t, err)
	mover.SetLabels(map[string]string{"watch": "me"})
	_, err = cms.Update(ctx, mover, metav1.UpdateOptions{})
	require.NoError(t, err)
	var moves []string
	for len(moves) < 3 {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(t, ok, "the watch ended early")
			u := ev.Object.(*unstructured.Unstructured)
			moves = append(moves, string(ev.Type)+" "+u.GetLabels()["watch"])
		case <-timeout:
			t.Fatalf("events so far: %v", moves)
		}
	}
	assert.Equal(t, []string{"ADDED me", "DELETED me", "ADDED me"}, moves)
}

func crdObject(group, plural, kind string, versions ...map[string]any) *unstructured.Unstructured {
	vs := make([]any, len(versions))
	for i, v := range versions {
		vs[i] = v
	}
	return obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", plural+"."+group, map[string]any{
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names":    map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind, "listKind": kind + "List"},
			"versions": vs,
		},
	})
}

func crdVersion(name string, served, storage, status bool) map[string]any {
	v := map[string]any{"name": name, "served": served, "storage": storage,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
	if status {
		v["subresources"] = map[string]any{"status": map[string]any{}}
	}
	return v
}

func (s *suite) waitEstablished(t *testing.T, name string) {
	s.eventually(t, "CRD "+name+" Established", func() bool {
		c, err := s.client.Resource(crds).Get(s.ctx(t), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
		return slices.ContainsFunc(conds, func(x any) bool {
			m := x.(map[string]any)
			return m["type"] == "Established" && m["status"] == "True"
		})
	})
}

func (s *suite) customResources(t *testing.T, prefix string) {
	ctx := s.ctx(t)
	group := prefix + ".contract.restoregraph.dev"
	// Versions listed lowest priority first: discovery must still prefer v1.
	c := crdObject(group, "widgets", "Widget", crdVersion("v1alpha1", true, false, true), crdVersion("v1beta1", true, true, true), crdVersion("v1", true, false, true))
	bad := c.DeepCopy()
	unstructured.SetNestedField(bad.Object, "Widget", "spec", "names", "singular")
	_, err := s.client.Resource(crds).Create(ctx, bad, metav1.CreateOptions{})
	assert.True(t, apierrors.IsInvalid(err), "names must be lowercase DNS-1035 labels: %v", err)

	_, err = s.client.Resource(crds).Create(ctx, c, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { s.client.Resource(crds).Delete(context.Background(), "widgets."+group, metav1.DeleteOptions{}) })
	s.waitEstablished(t, "widgets."+group)

	var preferred string
	s.eventually(t, "the group in discovery", func() bool {
		groups, err := s.disc.ServerGroups()
		if err != nil {
			return false
		}
		for _, g := range groups.Groups {
			if g.Name == group {
				preferred = g.PreferredVersion.Version
				return true
			}
		}
		return false
	})
	assert.Equal(t, "v1", preferred, "the highest-priority served version is preferred, whatever the order of spec.versions")

	at := func(v string) dynamic.ResourceInterface {
		return s.client.Resource(schema.GroupVersionResource{Group: group, Version: v, Resource: "widgets"}).Namespace(s.ns)
	}
	w := obj(group+"/v1beta1", "Widget", s.ns, "w1", map[string]any{"spec": map[string]any{"size": int64(1)}, "status": map[string]any{"ok": true}})
	created, err := at("v1beta1").Create(ctx, w, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 1, created.GetGeneration())
	_, hasStatus := created.Object["status"]
	assert.False(t, hasStatus, "with a status subresource, create drops status")

	asV1, err := at("v1").Get(ctx, "w1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, group+"/v1", asV1.GetAPIVersion(), "one object, served at every served version")
	assert.Equal(t, created.GetUID(), asV1.GetUID())

	asV1.Object["spec"] = map[string]any{"size": int64(2)}
	asV1.Object["status"] = map[string]any{"ok": true}
	updated, err := at("v1").Update(ctx, asV1, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 2, updated.GetGeneration(), "a spec change bumps the generation")
	_, hasStatus = updated.Object["status"]
	assert.False(t, hasStatus, "the main resource does not update status")

	updated.Object["status"] = map[string]any{"ok": true}
	withStatus, err := at("v1").UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"ok": true}, withStatus.Object["status"])
	assert.EqualValues(t, 2, withStatus.GetGeneration(), "a status change leaves the generation")

	require.NoError(t, s.client.Resource(crds).Delete(ctx, "widgets."+group, metav1.DeleteOptions{}))
	s.eventually(t, "the custom resources to stop being served", func() bool {
		_, err := at("v1").Get(ctx, "w1", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

func (s *suite) namespaceLifecycle(t *testing.T) {
	ctx := s.ctx(t)
	name := s.ns + "-gone"
	s.createNamespace(t, name)
	_, err := s.client.Resource(configmaps).Namespace(name).Create(ctx, obj("v1", "ConfigMap", name, "inside", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, s.client.Resource(namespaces).Delete(ctx, name, metav1.DeleteOptions{}))
	s.eventually(t, "namespace "+name+" and its contents to be removed", func() bool {
		_, err := s.client.Resource(namespaces).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	_, err = s.client.Resource(configmaps).Namespace(name).Get(ctx, "inside", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

func (s *suite) garbageCollection(t *testing.T) {
	ctx := s.ctx(t)
	cms := s.client.Resource(configmaps).Namespace(s.ns)
	owner, err := cms.Create(ctx, obj("v1", "ConfigMap", s.ns, "gc-owner", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	owned := func(name string, uid types.UID) *unstructured.Unstructured {
		o := obj("v1", "ConfigMap", s.ns, name, nil)
		o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "gc-owner", UID: uid}})
		return o
	}
	child, err := cms.Create(ctx, owned("gc-child", owner.GetUID()), metav1.CreateOptions{})
	require.NoError(t, err)
	grandchild := owned("gc-grandchild", child.GetUID())
	grandchild.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "gc-child", UID: child.GetUID()}})
	_, err = cms.Create(ctx, grandchild, metav1.CreateOptions{})
	require.NoError(t, err)
	other, err := cms.Create(ctx, obj("v1", "ConfigMap", s.ns, "gc-other", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	two := owned("gc-two-owners", owner.GetUID())
	two.SetOwnerReferences(append(two.GetOwnerReferences(), metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "gc-other", UID: other.GetUID()}))
	_, err = cms.Create(ctx, two, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cms.Create(ctx, owned("gc-stale", "11111111-2222-3333-4444-555555555555"), metav1.CreateOptions{})
	require.NoError(t, err)

	gone := func(name string) func() bool {
		return func() bool {
			_, err := cms.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}
	}
	s.eventually(t, "an object whose owner UID does not exist to be collected", gone("gc-stale"))
	_, err = cms.Get(ctx, "gc-child", metav1.GetOptions{})
	require.NoError(t, err, "an object whose owner exists stays")
	require.NoError(t, cms.Delete(ctx, "gc-owner", metav1.DeleteOptions{}))
	s.eventually(t, "the dependent of a deleted owner to be collected", gone("gc-child"))
	s.eventually(t, "the dependent of a collected owner to be collected in turn", gone("gc-grandchild"))
	_, err = cms.Get(ctx, "gc-two-owners", metav1.GetOptions{})
	require.NoError(t, err, "an object with an owner left stays")
	require.NoError(t, cms.Delete(ctx, "gc-other", metav1.DeleteOptions{}))
	s.eventually(t, "an object whose last owner is deleted to be collected", gone("gc-two-owners"))
}
