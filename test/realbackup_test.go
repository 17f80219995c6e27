package test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/backup"
	"github.com/restoregraph/restoregraph/bench/clirun"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
)

// startCluster starts a control plane of its own for one test.
func startCluster(t testing.TB, opts harness.Options) *harness.Cluster {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := harness.StartWith(ctx, dir, harness.Binaries{}, opts)
	if err != nil && c != nil {
		t.Log(c.Log("kube-apiserver"))
	}
	require.NoError(t, err)
	t.Cleanup(c.Stop)
	return c
}

// app is a typical application namespace, as a person writes it.
const app = `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: app, namespace: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {mode: production}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: shop}
stringData: {password: hunter2}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: shop}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects: [{kind: ServiceAccount, name: app, namespace: shop}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      serviceAccountName: app
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80}]
        envFrom: [{configMapRef: {name: settings}}, {secretRef: {name: creds}}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: web-public, namespace: shop}
spec: {type: NodePort, selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec: {clusterIP: None, selector: {app: db}, ports: [{port: 5432}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: db
        image: postgres:17
        volumeMounts: [{name: data, mountPath: /var/lib/postgresql/data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: busybox:1.37, command: [sh, -c, "echo migrated"]}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: shop}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: report, image: busybox:1.37, command: [sh, -c, "echo report"]}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all, namespace: shop}
spec: {podSelector: {}, policyTypes: [Ingress]}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 3
  maxReplicas: 6
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: debug, namespace: shop, labels: {app: debug}}
spec:
  nodeName: node-a
  containers: [{name: debug, image: busybox:1.37, command: [sleep, "3600"]}]
`

// written is what a person wrote: the objects restored must include every one.
type written struct {
	gvr        schema.GroupVersionResource
	namespace  string
	name       string
	obj        *unstructured.Unstructured
	namespaced bool
}

func appObjects(t testing.TB, mapper meta.RESTMapper) []written {
	t.Helper()
	var out []written
	for _, doc := range strings.Split(app, "\n---\n") {
		obj := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj.Object))
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		require.NoError(t, err, gvk.String())
		out = append(out, written{gvr: m.Resource, namespace: obj.GetNamespace(), name: obj.GetName(), obj: obj,
			namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace})
	}
	return out
}

// createApp creates the application in c and waits until the controllers have done what
// they do: ReplicaSet and Pods, the StatefulSet's Pod and claim, the Job's Pod, endpoint
// slices, the namespace's default ServiceAccount and kube-root-ca.crt, Events.
func createApp(t testing.TB, tgt restore.Target) []written {
	t.Helper()
	ctx := context.Background()
	objs := appObjects(t, tgt.Mapper)
	for _, w := range objs {
		_, err := tgt.Dynamic.Resource(w.gvr).Namespace(w.namespace).Create(ctx, w.obj, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) { // the namespace's default ServiceAccount, not yet there
			require.Eventually(t, func() bool {
				_, err = tgt.Dynamic.Resource(w.gvr).Namespace(w.namespace).Create(ctx, w.obj, metav1.CreateOptions{})
				return err == nil
			}, 30*time.Second, 100*time.Millisecond, "%s %s: %v", w.gvr, w.name, err)
		} else {
			require.NoError(t, err, "%s %s", w.gvr, w.name)
		}
	}
	for _, want := range []struct {
		gvr   schema.GroupVersionResource
		count int
	}{
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, 1},
		{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, 3 + 1 + 1 + 1}, // web, db-0, migrate, debug
		{schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, 1},
		{schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}, 3},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "controllerrevisions"}, 1},
		{schema.GroupVersionResource{Version: "v1", Resource: "events"}, 1},
	} {
		require.Eventually(t, func() bool {
			l, err := tgt.Dynamic.Resource(want.gvr).Namespace("shop").List(ctx, metav1.ListOptions{})
			return err == nil && len(l.Items) >= want.count
		}, 60*time.Second, 200*time.Millisecond, "the controllers make %d %s", want.count, want.gvr.Resource)
	}
	for _, name := range []string{"kube-root-ca.crt"} {
		require.Eventually(t, func() bool {
			_, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("shop").Get(ctx, name, metav1.GetOptions{})
			return err == nil
		}, 30*time.Second, 200*time.Millisecond)
	}
	return objs
}

// backupApp writes the shop namespace of src as a Velero backup.
func backupApp(t *testing.T, c *rest.Config) string {
	t.Helper()
	disc, err := discovery.NewDiscoveryClientForConfig(c)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "shop.tar.gz")
	f, err := os.Create(path)
	require.NoError(t, err)
	res, err := backup.Run(context.Background(), backup.Source{Dynamic: dyn, Discovery: disc}, f, backup.Options{Filter: filter.Spec{IncludeNamespaces: []string{"shop"}}})
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Empty(t, res.Incomplete)
	t.Logf("backup of shop: %d objects, %d bodies", res.Objects, res.Copies)
	return path
}

// TestRestoreARealApplicationBackup backs up an application namespace from a cluster
// whose controllers ran, and restores it into another whose Service range differs.
func TestRestoreARealApplicationBackup(t *testing.T) {
	t.Parallel() // its own control planes: beside the other tests that have theirs
	opts := harness.Options{Controllers: harness.AppControllers, ServiceAccountAdmission: true}
	opts.ServiceCIDR = "10.0.0.0/24"
	src := startCluster(t, opts)
	opts.ServiceCIDR = "10.96.0.0/24"
	dst := startCluster(t, opts)
	srcTarget, dstTarget := restoreTarget(t, src.Config), restoreTarget(t, dst.Config)

	objs := createApp(t, srcTarget)
	// A ConfigMap whose fields Helm manages, by server-side apply: after the restore,
	// Helm's next apply of a new value must not conflict with the restore.
	configmaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	_, err := srcTarget.Dynamic.Resource(configmaps).Namespace("shop").Patch(context.Background(), "helm-values", types.ApplyPatchType,
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"helm-values","namespace":"shop"},"data":{"mode":"blue"}}`),
		metav1.PatchOptions{FieldManager: "helm"})
	require.NoError(t, err)
	path := backupApp(t, src.Config)

	if out := os.Getenv("RESTOREGRAPH_WRITE_FIXTURE"); out != "" {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(out, data, 0o644), "the unit tests' fixture, rewritten")
	}
	b, err := archive.ReadFile(context.Background(), path, archive.Options{})
	require.NoError(t, err, "the backup reads")
	ctx := context.Background()
	started := time.Now()
	rep, err := restore.Run(ctx, b, dstTarget, restore.PlanOptions{}, restore.RunOptions{})
	took := time.Since(started)
	require.NoError(t, err)
	var lines []string
	for o := range rep.Objects() {
		if o.Status != restore.Restored {
			lines = append(lines, string(o.Status)+" "+o.Kind+" "+o.Name+": "+o.Reason+" "+strings.Join(o.Warnings, "; "))
		}
	}
	t.Logf("restored %d objects in %s: %v\n%s", rep.Len(), took.Round(time.Millisecond), rep.Summary, strings.Join(lines, "\n"))
	assert.True(t, rep.OK(), "the restore is whole (exit code 0)")
	assert.Less(t, took, 30*time.Second, "seconds, not minutes")

	// Every object a person wrote is back.
	for _, w := range objs {
		_, err := dstTarget.Dynamic.Resource(w.gvr).Namespace(w.namespace).Get(ctx, w.name, metav1.GetOptions{})
		assert.NoError(t, err, "%s %s restored", w.gvr.Resource, w.name)
	}
	// Services have IPs from the target's range.
	services, err := dstTarget.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "services"}).Namespace("shop").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, s := range services.Items {
		ip, _, _ := unstructured.NestedString(s.Object, "spec", "clusterIP")
		if s.GetName() == "db" {
			assert.Equal(t, "None", ip, "the headless Service stays headless")
		} else {
			assert.True(t, strings.HasPrefix(ip, "10.96.0."), "%s has %s, from the target's range", s.GetName(), ip)
		}
	}
	// The Deployment ends with exactly one ReplicaSet and 3 Pods.
	rsGVR := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	podGVR := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	var rsCount, webPods int
	assert.Eventually(t, func() bool {
		rs, err1 := dstTarget.Dynamic.Resource(rsGVR).Namespace("shop").List(ctx, metav1.ListOptions{})
		pods, err2 := dstTarget.Dynamic.Resource(podGVR).Namespace("shop").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err1 != nil || err2 != nil {
			return false
		}
		rsCount, webPods = len(rs.Items), 0
		for _, p := range pods.Items {
			if p.GetDeletionTimestamp() == nil {
				webPods++
			}
		}
		return rsCount == 1 && webPods == 3
	}, 30*time.Second, 500*time.Millisecond, "one ReplicaSet and 3 Pods")
	t.Logf("after the controllers: %d ReplicaSet(s), %d web Pod(s)", rsCount, webPods)

	// No Event is restored; no ownerReference dangles.
	events, err := dstTarget.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "events"}).Namespace("shop").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, e := range events.Items {
		assert.Empty(t, e.GetAnnotations()[restore.SourceUIDAnnotation], "event %s was restored", e.GetName())
	}
	assertNoDanglingOwners(t, dstTarget, b, "shop")

	// Field ownership as the source had it: the managed fields of what Helm applied are
	// the source's, and Helm's next apply of a new value is no conflict; every owner
	// reference's entry in an object's managed fields names a reference it has.
	srcSettings, err := srcTarget.Dynamic.Resource(configmaps).Namespace("shop").Get(ctx, "helm-values", metav1.GetOptions{})
	require.NoError(t, err)
	dstSettings, err := dstTarget.Dynamic.Resource(configmaps).Namespace("shop").Get(ctx, "helm-values", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, srcSettings.GetManagedFields(), dstSettings.GetManagedFields())
	_, err = dstTarget.Dynamic.Resource(configmaps).Namespace("shop").Patch(ctx, "helm-values", types.ApplyPatchType,
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"helm-values","namespace":"shop"},"data":{"mode":"green"}}`),
		metav1.PatchOptions{FieldManager: "helm"})
	assert.NoError(t, err, "Helm's apply of a new value after the restore")
	assertManagedOwnersHeld(t, dstTarget, b, "shop")

	t.Run("namespace mapping into the source cluster", func(t *testing.T) {
		before := snapshot(t, srcTarget, b, "shop")
		rep, err := restore.Run(ctx, b, srcTarget, restore.PlanOptions{Selection: restore.Selection{NamespaceMappings: map[string]string{"shop": "shop-copy"}}}, restore.RunOptions{})
		require.NoError(t, err)
		require.True(t, rep.OK(), "%v", rep.Summary)
		for _, w := range objs {
			ns := w.namespace
			name := w.name
			if ns == "shop" {
				ns = "shop-copy"
			} else if w.gvr.Resource == "namespaces" {
				name = "shop-copy"
			}
			_, err := srcTarget.Dynamic.Resource(w.gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			assert.NoError(t, err, "%s %s in the copy", w.gvr.Resource, w.name)
		}
		assert.Equal(t, before, snapshot(t, srcTarget, b, "shop"), "the source namespace is untouched")
		assertNoDanglingOwners(t, srcTarget, b, "shop-copy")
		rb, err := srcTarget.Dynamic.Resource(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}).
			Namespace("shop-copy").Get(ctx, "reader", metav1.GetOptions{})
		require.NoError(t, err)
		subjects, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
		assert.Equal(t, "shop-copy", subjects[0].(map[string]any)["namespace"])
	})

	t.Run("backup, restore and verify with the CLI", func(t *testing.T) {
		fresh := startCluster(t, opts)
		tarball := filepath.Join(t.TempDir(), "shop-cli.tar.gz")
		code, out := cli(t, "backup", "-o", tarball, "--include-namespaces", "shop", "--kubeconfig", src.Kubeconfig)
		require.Equal(t, 0, code, out)
		assert.FileExists(t, strings.TrimSuffix(tarball, ".tar.gz")+".manifest.json.gz", "the manifest beside the tarball")
		code, out = cli(t, "restore", "--backup", tarball, "--kubeconfig", fresh.Kubeconfig)
		require.Equal(t, 0, code, out)
		code, out = cli(t, "verify", "--backup", tarball, "--kubeconfig", fresh.Kubeconfig)
		require.Equal(t, 0, code, out)
		t.Logf("verify: %s", strings.TrimSpace(out))

		tgt := restoreTarget(t, fresh.Config)
		require.NoError(t, tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("shop").
			Delete(ctx, "settings", metav1.DeleteOptions{}))
		secrets := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace("shop")
		creds, err := secrets.Get(ctx, "creds", metav1.GetOptions{})
		require.NoError(t, err)
		unstructured.SetNestedField(creds.Object, "c3dvcmRmaXNo", "data", "password")
		_, err = secrets.Update(ctx, creds, metav1.UpdateOptions{})
		require.NoError(t, err)
		code, out = cli(t, "verify", "--backup", tarball, "--kubeconfig", fresh.Kubeconfig)
		assert.Equal(t, 1, code, out)
		assert.Contains(t, out, "Missing  ConfigMap shop/settings")
		assert.Contains(t, out, "Differs  Secret shop/creds: data.password: not what the backup holds (a Secret's values are not shown)")
		assert.NotContains(t, out, "aHVudGVyMg==", "no Secret's value in the report")
		assert.NotContains(t, out, "c3dvcmRmaXNo")
	})

	t.Run("include-resources and selector", func(t *testing.T) {
		third := startCluster(t, opts)
		tgt := restoreTarget(t, third.Config)
		for _, tc := range []struct {
			resources []string
			selector  string
			want      int // objects of those resources that carry the labels, the namespace aside
		}{
			// The Deployment and Services carry app=web only in their templates and
			// selectors: the ReplicaSet alone does.
			{[]string{"rs", "svc", "Deployment"}, "app=web", 1},
			// The debug Pod runs as the namespace's default ServiceAccount, which carries no
			// label: the target's controller makes it.
			{[]string{"po", "sa"}, "app=debug", 1},
		} {
			sel, err := labels.Parse(tc.selector)
			require.NoError(t, err)
			rep, err := restore.Run(ctx, b, tgt, restore.PlanOptions{Selection: restore.Selection{Filter: filter.Spec{IncludeResources: tc.resources, Selector: sel}}}, restore.RunOptions{})
			require.NoError(t, err)
			for o := range rep.Objects() {
				if o.Status == restore.Failed {
					t.Logf("failed: %s %s: %s", o.Kind, o.Name, o.Reason)
				}
			}
			require.True(t, rep.OK(), "%v", rep.Summary)
			resolved, err := filter.Spec{IncludeResources: tc.resources}.Resolve(restoreCatalog(b))
			require.NoError(t, err)
			var want, made []string
			for _, it := range b.Manifest().Items() {
				if resolved.Resource(it.GroupResource()) && sel.Matches(it.Labels) {
					want = append(want, it.Kind+"/"+it.Name)
				}
			}
			for o := range rep.Objects() {
				if (o.Status == restore.Restored || o.Status == restore.Adopted) && o.Kind != "Namespace" {
					made = append(made, o.Kind+"/"+o.Name)
				}
			}
			slices.Sort(want)
			slices.Sort(made)
			assert.Len(t, want, tc.want)
			assert.Equal(t, want, made, "exactly what %v and %s name", tc.resources, tc.selector)
		}
	})
}

// cliBinary builds the restoregraph command once for the tests that run it.
var cliBinary = sync.OnceValues(func() (string, error) {
	return clirun.Build(filepath.Join("..", "cmd", "restoregraph"))
})

// cli runs the restoregraph command and returns its exit code and output.
func cli(t *testing.T, args ...string) (int, string) {
	t.Helper()
	return cliEnv(t, nil, args...)
}

// cliEnv is cli with env ("KEY=value") added to the environment the command inherits.
func cliEnv(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	bin, err := cliBinary()
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err, string(out))
	return 0, string(out)
}

// cliApart runs the command as cli does, with its standard output and error apart.
func cliApart(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	bin, err := cliBinary()
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errOut.String()
	}
	require.NoError(t, err, errOut.String())
	return 0, out.String(), errOut.String()
}

// restoreCatalog names the backup's resources as a filter resolves them.
func restoreCatalog(b *archive.Backup) filter.Catalog {
	var c filter.Catalog
	for _, it := range b.Manifest().Items() {
		c = append(c, filter.Names{GroupResource: it.GroupResource(), Kind: it.Kind})
	}
	return append(c, filter.Names{GroupResource: schema.GroupResource{Group: "apps", Resource: "replicasets"}, ShortNames: []string{"rs"}},
		filter.Names{GroupResource: schema.GroupResource{Resource: "services"}, ShortNames: []string{"svc"}},
		filter.Names{GroupResource: schema.GroupResource{Resource: "pods"}, ShortNames: []string{"po"}},
		filter.Names{GroupResource: schema.GroupResource{Resource: "serviceaccounts"}, ShortNames: []string{"sa"}})
}

// snapshot lists every object of the backup's resources in namespace: kind, name,
// resourceVersion.
func snapshot(t *testing.T, tgt restore.Target, b *archive.Backup, namespace string) []string {
	t.Helper()
	var out []string
	for _, r := range b.Resources() {
		gvr := schema.GroupVersionResource{Group: r.Group, Version: r.Preferred, Resource: r.Resource}
		l, err := tgt.Dynamic.Resource(gvr).Namespace(namespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, o := range l.Items {
			if o.GetKind() == "Event" || o.GetKind() == "EndpointSlice" || o.GetKind() == "Endpoints" {
				continue // the controllers' own
			}
			out = append(out, o.GetKind()+"/"+o.GetName()+"@"+o.GetResourceVersion())
		}
	}
	slices.Sort(out)
	return out
}

// assertNoDanglingOwners checks that every ownerReference in namespace names a live object.
// assertManagedOwnersHeld checks that every owner reference's entry in the managed
// fields of what the restore made in namespace names a reference the object has: none
// names an owner's UID in the backup's cluster.
func assertManagedOwnersHeld(t *testing.T, tgt restore.Target, b *archive.Backup, namespace string) {
	t.Helper()
	entries := 0
	for _, o := range objectsIn(tgt, b, namespace) {
		if o.GetAnnotations()[restore.SourceUIDAnnotation] == "" {
			continue // not restored: made by the target's controllers
		}
		held := map[string]bool{}
		for _, ref := range o.GetOwnerReferences() {
			held[`k:{"uid":"`+string(ref.UID)+`"}`] = true
		}
		for _, e := range o.GetManagedFields() {
			if e.FieldsV1 == nil {
				continue
			}
			var fields struct {
				Metadata struct {
					OwnerReferences map[string]any `json:"f:ownerReferences"`
				} `json:"f:metadata"`
			}
			require.NoError(t, json.Unmarshal(e.FieldsV1.Raw, &fields))
			for k := range fields.Metadata.OwnerReferences {
				if k == "." {
					continue
				}
				entries++
				assert.True(t, held[k], "%s %s: %s's managed fields name owner %s, which it does not have", o.GetKind(), o.GetName(), e.Manager, k)
			}
		}
	}
	assert.NotZero(t, entries, "some restored object's managed fields name its owner")
}

// objectsIn lists what tgt holds in namespace of the resources b holds, each at the
// version b prefers; a resource the target does not serve there is left out.
func objectsIn(tgt restore.Target, b *archive.Backup, namespace string) []unstructured.Unstructured {
	var all []unstructured.Unstructured
	for _, r := range b.Resources() {
		gvr := schema.GroupVersionResource{Group: r.Group, Version: r.Preferred, Resource: r.Resource}
		l, err := tgt.Dynamic.Resource(gvr).Namespace(namespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			continue
		}
		all = append(all, l.Items...)
	}
	return all
}

func assertNoDanglingOwners(t *testing.T, tgt restore.Target, b *archive.Backup, namespace string) {
	t.Helper()
	all := objectsIn(tgt, b, namespace)
	live := map[types.UID]bool{}
	for _, o := range all {
		live[o.GetUID()] = true
	}
	for _, o := range all {
		for _, ref := range o.GetOwnerReferences() {
			assert.True(t, live[ref.UID], "%s %s: owner %s %s dangles", o.GetKind(), o.GetName(), ref.Kind, ref.Name)
		}
	}
}

// TestVeleroPluginsIntoTheRealServer restores through Velero plugin executables, built
// with Velero's own framework, from the command line into the real API server.
func TestVeleroPluginsIntoTheRealServer(t *testing.T) {
	bin := buildTestPlugins(t, t.TempDir())
	code, text := cli(t, "restore", "--backup", "../testdata/backups/shop-k8s-1.37.tar.gz", "--kubeconfig", cluster.Kubeconfig,
		"--plugin", bin, "--disable-plugin", "example.io/crash-once", "--namespace-mappings", "shop:plugins-shop", "-o", "json")
	require.Equal(t, 0, code, text)
	tgt := restoreTarget(t, cfg())
	settings, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("plugins-shop").
		Get(context.Background(), "settings", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "velero-plugin", settings.GetLabels()["restored-by"], "the v1 plugin's change")
	assert.Equal(t, "yes", settings.GetAnnotations()["example.io/seen"])
	procs, _ := exec.Command("pgrep", "-f", bin).Output()
	assert.Empty(t, strings.TrimSpace(string(procs)), "no plugin process left")
}
