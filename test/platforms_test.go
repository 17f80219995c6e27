package test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/backup"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
	"github.com/restoregraph/restoregraph/versionselect"
)

// guarded is a namespace whose ConfigMaps and Pods a webhook checks, failing closed,
// and the webhook's backend in it: the Deployment behind Service hook. Nothing
// answers the webhook's calls: the test bed runs no Service proxy, and kwok's Pods
// run nothing.
const guarded = `
apiVersion: v1
kind: Namespace
metadata: {name: guarded, labels: {guarded: "true"}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: hook, namespace: guarded}
spec:
  replicas: 1
  selector: {matchLabels: {app: hook}}
  template:
    metadata: {labels: {app: hook}}
    spec:
      containers: [{name: hook, image: "hook:1"}]
---
apiVersion: v1
kind: Service
metadata: {name: hook, namespace: guarded}
spec: {selector: {app: hook}, ports: [{port: 443}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: one, namespace: guarded}
data: {colour: blue}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: two, namespace: guarded}
data: {colour: green}
`

// guard is the webhook of namespace guarded, created once its backend is Available.
const guard = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: guard}
webhooks:
- name: guard.example.io
  failurePolicy: Fail
  sideEffects: None
  timeoutSeconds: 2
  admissionReviewVersions: [v1]
  clientConfig:
    service: {namespace: guarded, name: hook}
  namespaceSelector: {matchLabels: {guarded: "true"}}
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps, pods], scope: Namespaced}
`

// TestWebhookRestoredAfterWhatItGuards backs up a namespace guarded by a webhook that
// fails closed, from a cluster whose controllers and kwok ran its backend, and
// restores it into fresh clusters with and without the admission-webhooks rule. With
// it, the configuration is created last, once its backend is Available: every object
// is restored. Without it, the configuration comes first, and what it intercepts is
// refused, each failure naming the webhook and its Service.
func TestWebhookRestoredAfterWhatItGuards(t *testing.T) {
	t.Parallel() // its own control planes: beside the other tests that have theirs
	opts := harness.Options{Controllers: harness.AppControllers, Nodes: 1}
	ctx := context.Background()
	src := startCluster(t, opts)
	require.NoError(t, src.Schedule(ctx))
	applyYAML(t, src, guarded)
	waitAvailable(t, src, "guarded", "hook")
	applyYAML(t, src, guard)
	path := backupOf(t, src, filter.Spec{IncludeResources: []string{"namespaces", "deployments", "replicasets", "pods", "services", "configmaps",
		"validatingwebhookconfigurations"}})
	b, err := archive.ReadFile(ctx, path, archive.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() }) // after the parallel subtests

	t.Run("with the rule", func(t *testing.T) {
		t.Parallel()
		dst := startCluster(t, opts)
		require.NoError(t, dst.Schedule(ctx))
		tgt := restoreTarget(t, dst.Config)
		p, err := restore.NewPlan(ctx, b, tgt, restore.PlanOptions{})
		require.NoError(t, err)
		dot, err := p.DOT()
		require.NoError(t, err)
		assert.Contains(t, string(dot), "admission-webhooks")
		rep, err := restore.Apply(ctx, p, tgt, restore.RunOptions{ItemTimeout: 2 * time.Minute})
		require.NoError(t, err)
		res := results(rep, "guarded", "")
		require.True(t, rep.OK(), "%v: %s", rep.Summary, firstFailed(rep))
		guard, backend := res["ValidatingWebhookConfiguration/guard"], res["Deployment/hook"]
		require.Equal(t, restore.Restored, guard.Status)
		for _, name := range []string{"ConfigMap/one", "ConfigMap/two", "Service/hook"} {
			assert.Equal(t, restore.Restored, res[name].Status, name)
			assert.False(t, guard.Created.Before(res[name].Ready), "%s before the webhook", name)
		}
		assert.False(t, guard.Created.Before(backend.Ready), "the webhook after its backend is ready")
		dep, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("guarded").
			Get(ctx, "hook", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "True", conditionOf(dep, "Available"), "the backend was waited for until Available")
	})

	t.Run("without it", func(t *testing.T) {
		t.Parallel()
		dst := startCluster(t, harness.Options{})
		tgt := restoreTarget(t, dst.Config)
		rep, err := restore.Run(ctx, b, tgt, restore.PlanOptions{Selection: restore.Selection{Disabled: restore.DisabledByName(restore.AdmissionWebhooks)}},
			restore.RunOptions{ItemTimeout: 15 * time.Second})
		require.NoError(t, err)
		assert.False(t, rep.OK())
		refused := 0
		for o := range rep.Objects() {
			var we *restore.WebhookError
			if errors.As(o.Err, &we) {
				if refused++; refused == 1 {
					t.Logf("%s %s/%s: %v", o.Kind, o.Namespace, o.Name, o.Err)
				}
				assert.Equal(t, "guard.example.io", we.Webhook)
				assert.Equal(t, "guarded/hook", we.Service, we.Error())
			}
		}
		assert.Positive(t, refused, "what the webhook intercepts is refused, named: %s", firstFailed(rep))
	})
}

// TestConvertedResourcesRestoredAtTheStoredVersion restores custom resources of a CRD
// whose versions a webhook converts, the backup holding them at both versions, into
// the real API server, where nothing serves the webhook: at the version the CRD stores,
// which the plan chooses, they are created without it; at the other, which the user's
// priority chooses, they are refused, the API server naming the conversion webhook.
func TestConvertedResourcesRestoredAtTheStoredVersion(t *testing.T) {
	t.Parallel()
	c := startCluster(t, harness.Options{})
	ctx := context.Background()
	versions := []any{}
	for _, v := range []string{"v1", "v2"} {
		versions = append(versions, map[string]any{"name": v, "served": true, "storage": v == "v1",
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
	}
	crd := map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets.example.io", "uid": "crd-gadgets"},
		"spec": map[string]any{"group": "example.io", "scope": "Namespaced", "versions": versions,
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
			"conversion": map[string]any{"strategy": "Webhook", "webhook": map[string]any{"conversionReviewVersions": []any{"v1"},
				"clientConfig": map[string]any{"service": map[string]any{"namespace": "platform", "name": "converter", "port": int64(443)}}}}}}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "gadgets", "uid": "ns-gadgets"}}
	path := writeBackup(t, []map[string]any{crd, ns}, "gadgets", func(v string) map[string]any {
		return map[string]any{"apiVersion": "example.io/" + v, "kind": "Gadget", "metadata": map[string]any{"name": "g", "namespace": "gadgets", "uid": "gadget-g"},
			"spec": map[string]any{"size": int64(3)}}
	}, "v1", "v2")
	b, err := archive.ReadFile(ctx, path, archive.Options{})
	require.NoError(t, err)
	defer b.Close()
	tgt := restoreTarget(t, c.Config)

	rep, err := restore.Run(ctx, b, tgt, restore.PlanOptions{Selection: restore.Selection{
		Priorities: versionselect.Priorities{{Group: "example.io", Resource: "gadgets"}: {"v2"}}}}, restore.RunOptions{ItemTimeout: 10 * time.Second})
	require.NoError(t, err)
	require.False(t, rep.OK())
	gadget := results(rep, "gadgets", "")["Gadget/g"]
	require.Equal(t, restore.Failed, gadget.Status)
	assert.Contains(t, gadget.Reason, "conversion webhook for example.io/v2, Kind=Gadget failed")

	rep, err = restore.Run(ctx, b, tgt, restore.PlanOptions{}, restore.RunOptions{ItemTimeout: time.Minute})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v: %s", rep.Summary, firstFailed(rep))
	assert.Equal(t, restore.Restored, results(rep, "gadgets", "")["Gadget/g"].Status)
}

// backupOf writes what f selects of c as a backup, and returns its path.
func backupOf(t *testing.T, c *harness.Cluster, f filter.Spec) string {
	t.Helper()
	disc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.Config)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "backup.tar.gz")
	out, err := os.Create(path)
	require.NoError(t, err)
	res, err := backup.Run(context.Background(), backup.Source{Dynamic: dyn, Discovery: disc}, out, backup.Options{Filter: f})
	require.NoError(t, err)
	require.NoError(t, out.Close())
	require.Empty(t, res.Incomplete)
	return path
}

// waitAvailable waits until the Deployment namespace/name is Available.
func waitAvailable(t testing.TB, c *harness.Cluster, namespace, name string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.Config)
	require.NoError(t, err)
	var dep *unstructured.Unstructured
	if !assert.Eventually(t, func() bool {
		dep, err = dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(namespace).
			Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && conditionOf(dep, "Available") == "True"
	}, time.Minute, 200*time.Millisecond, "Deployment %s/%s Available", namespace, name) {
		pods, _ := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(namespace).List(context.Background(), metav1.ListOptions{})
		for _, p := range pods.Items {
			t.Logf("pod %s: %v %v", p.GetName(), p.Object["spec"].(map[string]any)["nodeName"], p.Object["status"])
		}
		t.Fatalf("Deployment %s/%s: %v", namespace, name, dep.Object["status"])
	}
}

// writeBackup writes objs, and the object made by versioned at each of versions (the
// last the preferred) under resource, into a backup file.
func writeBackup(t *testing.T, objs []map[string]any, resource string, versioned func(v string) map[string]any, versions ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "backup.tar.gz")
	f, err := os.Create(path)
	require.NoError(t, err)
	w, err := archive.NewWriter(f, archive.Format11)
	require.NoError(t, err)
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o}
		resource := strings.ToLower(u.GetKind()) + "s" // the plural of every kind given here
		require.NoError(t, w.Add(u, resource, true))
	}
	for i, v := range versions {
		require.NoError(t, w.Add(&unstructured.Unstructured{Object: versioned(v)}, resource, i == len(versions)-1))
	}
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())
	return path
}

// results are the report's objects of namespace ns (and cluster-scoped ones), by
// Kind/name; name, when set, keeps only the objects so named.
func results(rep *restore.Report, ns, name string) map[string]restore.ObjectResult {
	out := map[string]restore.ObjectResult{}
	for o := range rep.Objects() {
		if (o.Namespace == ns || o.Namespace == "") && (name == "" || o.Name == name) {
			out[o.Kind+"/"+o.Name] = o
		}
	}
	return out
}

// firstFailed names the report's first failed object and why.
func firstFailed(rep *restore.Report) string {
	for o := range rep.Unusual() {
		if o.Status == restore.Failed {
			return o.Kind + " " + o.Namespace + "/" + o.Name + ": " + o.Reason
		}
	}
	return ""
}

// conditionOf returns the status of obj's condition of type t.
func conditionOf(obj *unstructured.Unstructured, t string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == t {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// things is an aggregated API, v1.things.example.io, served by the Deployment behind
// Service things, with a Deployment of no API beside it.
const things = `
apiVersion: v1
kind: Namespace
metadata: {name: things}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: things, namespace: things}
spec:
  replicas: 1
  selector: {matchLabels: {app: things}}
  template:
    metadata: {labels: {app: things}}
    spec:
      containers: [{name: things, image: "things:1"}]
---
apiVersion: v1
kind: Service
metadata: {name: things, namespace: things}
spec: {selector: {app: things}, ports: [{port: 443}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: things}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "web:1"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: things}
data: {colour: blue}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.things.example.io}
spec:
  group: things.example.io
  version: v1
  service: {namespace: things, name: things}
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 1000
  versionPriority: 15
`

// TestAPIServiceAndOrderOnTheRealServer restores an aggregated API and a user's order
// into the real API server, whose controllers and kwok run the Deployments: with the
// api-services rule the APIService is created once its backend is Available, without
// it at once; with an order that puts Deployments before ConfigMaps, the ConfigMap is
// created once every Deployment is healthy, without one before.
func TestAPIServiceAndOrderOnTheRealServer(t *testing.T) {
	t.Parallel() // its own control planes: beside the other tests that have theirs
	ctx := context.Background()
	opts := harness.Options{Controllers: harness.AppControllers, Nodes: 1}
	src := startCluster(t, opts)
	require.NoError(t, src.Schedule(ctx))
	applyYAML(t, src, things)
	waitAvailable(t, src, "things", "things")
	waitAvailable(t, src, "things", "web")
	path := backupOf(t, src, filter.Spec{IncludeResources: []string{"namespaces", "deployments", "services", "configmaps", "apiservices"}})
	b, err := archive.ReadFile(ctx, path, archive.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	order, err := restore.ParseOrder(strings.NewReader("groupKindDependencies:\n"+
		"- satisfying: {resourceGroup: apps, resourceKind: Deployment}\n  requiring: {resourceGroup: \"\", resourceKind: ConfigMap}\n"), "order.yaml")
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		sel  restore.Selection
		with bool
	}{
		{"with the rule and the order", restore.Selection{Order: order}, true},
		{"without", restore.Selection{Disabled: restore.DisabledByName(restore.APIServices)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dst := startCluster(t, opts)
			require.NoError(t, dst.Schedule(ctx))
			tgt := restoreTarget(t, dst.Config)
			p, err := restore.NewPlan(ctx, b, tgt, restore.PlanOptions{Selection: tc.sel})
			require.NoError(t, err)
			dot, err := p.DOT()
			require.NoError(t, err)
			assert.Equal(t, tc.with, strings.Contains(string(dot), "api-services"), "the rule's edges in the DOT")
			assert.Equal(t, tc.with, strings.Contains(string(dot), "restore-order"), "the order's edges in the DOT")
			rep, err := restore.Apply(ctx, p, tgt, restore.RunOptions{ItemTimeout: 2 * time.Minute})
			require.NoError(t, err)
			require.True(t, rep.OK(), "%v: %s", rep.Summary, firstFailed(rep))
			res := results(rep, "things", "")
			api, backend := res["APIService/v1.things.example.io"], res["Deployment/things"]
			settings, web := res["ConfigMap/settings"], res["Deployment/web"]
			if tc.with {
				assert.False(t, api.Created.Before(backend.Ready), "the APIService after its backend is Available")
				assert.False(t, settings.Created.Before(web.Ready), "the ConfigMap after the Deployments are healthy")
				assert.Greater(t, web.Ready.Sub(web.Created), time.Duration(0))
			} else {
				// Nothing held it back: created as soon as the restore started, with the
				// cluster-scoped objects, before its namespace's Deployment.
				assert.True(t, api.Created.Before(backend.Created), "the APIService at once")
			}
		})
	}
}
