package test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/clirun"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
	"github.com/restoregraph/restoregraph/velero"
	"github.com/restoregraph/restoregraph/velero/controller"
)

// certManagerUse is what cert-manager's documentation creates once it is installed: a
// self-signed ClusterIssuer, a CA Certificate issued by it, a CA ClusterIssuer of that
// CA, and an application's Issuer and Certificate.
const certManagerUse = `
apiVersion: v1
kind: Namespace
metadata: {name: sandbox}
---
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: selfsigned-issuer}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: my-selfsigned-ca, namespace: cert-manager}
spec:
  isCA: true
  commonName: my-selfsigned-ca
  secretName: root-secret
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: selfsigned-issuer, kind: ClusterIssuer, group: cert-manager.io}
---
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: my-ca-issuer}
spec: {ca: {secretName: root-secret}}
---
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: sandbox-selfsigned, namespace: sandbox}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web-tls, namespace: sandbox}
spec:
  secretName: web-tls
  dnsNames: [web.sandbox.svc]
  issuerRef: {name: my-ca-issuer, kind: ClusterIssuer, group: cert-manager.io}
`

// platformObjects reads the objects of a platform's rendered manifests
// (testdata/platforms, written by test/platforms from the project's own module).
func platformObjects(t testing.TB, name string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "platforms", name+".yaml"))
	require.NoError(t, err)
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj.Object))
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
	return out
}

// createAll creates objs in c as the admin, each in namespace ns when it is namespaced
// and names none.
func createAll(t testing.TB, c *harness.Cluster, ns string, objs []*unstructured.Unstructured) {
	t.Helper()
	tgt := restoreTarget(t, c.Config)
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		m, err := tgt.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		require.NoError(t, err, gvk.String())
		namespace := ""
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			if namespace = obj.GetNamespace(); namespace == "" {
				namespace = ns
			}
		}
		_, err = tgt.Dynamic.Resource(m.Resource).Namespace(namespace).Create(context.Background(), obj, metav1.CreateOptions{})
		require.NoError(t, err, "%s %s", gvk.Kind, obj.GetName())
	}
}

// isWebhookConfiguration reports whether obj configures admission webhooks.
func isWebhookConfiguration(obj *unstructured.Unstructured) bool {
	k := obj.GetKind()
	return k == "ValidatingWebhookConfiguration" || k == "MutatingWebhookConfiguration"
}

// TestCertManagerRestoredWhole installs cert-manager from its own chart (rendered from
// its module by test/platforms) into a cluster whose controllers and kwok run its
// Deployments, creates what its documentation creates, has the real Velero server back
// it up, and restores Velero's backup into fresh clusters: with the command (exit 0,
// every object of the backup there or left to or made again by the target's
// controllers, verify holding, every ownership link kept, nothing refused by
// cert-manager's webhooks, which fail closed and whose backend answers nothing here:
// their configurations are created last, once the webhook's Deployment is Available);
// with the controller in place of Velero's restore controller (Completed); without the
// admission-webhooks rule (exit 1, refused, named); and by Velero, for the table.
func TestCertManagerRestoredWhole(t *testing.T) {
	t.Parallel() // its own control planes and S3 server: beside the other tests that have theirs
	ctx := context.Background()
	s, err := harness.StartS3(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(s.Stop)

	src := veleroCluster(t)
	require.NoError(t, src.Schedule(ctx))
	createAll(t, src, "", []*unstructured.Unstructured{{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "cert-manager"}}}})
	var webhooks, rest []*unstructured.Unstructured
	for _, obj := range platformObjects(t, "cert-manager") {
		if isWebhookConfiguration(obj) {
			webhooks = append(webhooks, obj)
		} else {
			rest = append(rest, obj)
		}
	}
	createAll(t, src, "cert-manager", rest)
	for _, d := range []string{"cert-manager", "cert-manager-cainjector", "cert-manager-webhook"} {
		waitAvailable(t, src, "cert-manager", d)
	}
	applyYAML(t, src, certManagerUse)
	// Last, as a running cert-manager has them: from here on its resources go through
	// a webhook that nothing here answers.
	createAll(t, src, "", webhooks)

	// The CRDs exist before the Velero server starts, which reads what is served once.
	v, err := src.StartVelero(ctx, s, harness.VeleroOptions{Features: []string{"EnableAPIGroupVersions"}})
	require.NoError(t, err)
	const name = "cert-manager"
	out, err := v.Run(ctx, "backup", "create", name, "--include-namespaces", "cert-manager,sandbox", "--include-cluster-resources=true",
		"--include-resources", "namespaces,customresourcedefinitions,clusterroles,clusterrolebindings,roles,rolebindings,serviceaccounts,"+
			"deployments,replicasets,pods,services,configmaps,secrets,validatingwebhookconfigurations,mutatingwebhookconfigurations,"+
			"certificates.cert-manager.io,issuers.cert-manager.io,clusterissuers.cert-manager.io", "--wait")
	require.NoError(t, err, out)
	require.Equal(t, "Completed", veleroPhase(t, src, veleroBackups, name, "Completed", "PartiallyFailed", "Failed"), v.Log())
	src.StopVelero()
	tarball := filepath.Join(s.Path("backups/"+name), name+".tar.gz")
	b, err := archive.ReadFile(ctx, tarball, archive.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })

	bin, err := cliBinary()
	require.NoError(t, err)

	// What broke before the admission-webhooks rule: the configurations, which wait
	// for nothing else, are created first, and cert-manager's resources are refused.
	t.Run("without the webhook rule", func(t *testing.T) {
		t.Parallel()
		dst := startCluster(t, harness.Options{})
		code, text := cli(t, "restore", "--backup", tarball, "--kubeconfig", dst.Kubeconfig, "--item-timeout", "15s",
			"--disable-plugin", restore.AdmissionWebhooks)
		assert.Equal(t, 1, code, text)
		assert.Contains(t, text, `admission webhook "webhook.cert-manager.io" (Service cert-manager/cert-manager-webhook) could not be called`)
	})

	t.Run("restoregraph", func(t *testing.T) {
		t.Parallel()
		restoreCertManager(t, bin, tarball, b)
	})

	// restoregraph's controller, in process as the chart's ServiceAccount, in place of
	// Velero's restore controller beside a Velero server that has the backup: velero
	// restore create, carried out by it.
	t.Run("controller", func(t *testing.T) {
		t.Parallel()
		vc := veleroCluster(t)
		require.NoError(t, vc.Schedule(ctx))
		v, err := vc.StartVelero(ctx, s, harness.VeleroOptions{Features: []string{"EnableAPIGroupVersions"}, ReadOnly: true,
			DisableControllers: harness.RestoreControllers})
		require.NoError(t, err)
		veleroPhase(t, vc, veleroBackups, name, "Completed")
		asSA := asChart(t, vc)
		dyn, err := dynamic.NewForConfig(asSA)
		require.NoError(t, err)
		cs, err := kubernetes.NewForConfig(asSA)
		require.NoError(t, err)
		tgt, err := restore.NewTarget(asSA)
		require.NoError(t, err)
		host, cmds := pluginHost(t, v.PluginDir())
		c, err := controller.New(controller.Config{Velero: velero.Client{Dynamic: dyn, Secrets: cs.CoreV1(), Namespace: "velero"},
			Kubernetes: cs, Target: tgt, Plugins: host, PluginCommands: cmds, Identity: "corpus", Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		runCtx, stop := context.WithCancel(ctx)
		ran := make(chan error, 1)
		go func() { ran <- c.Run(runCtx) }()
		t.Cleanup(func() { stop(); <-ran })
		started := time.Now()
		out, err := v.Run(ctx, "restore", "create", name+"-rg", "--from-backup", name, "--wait")
		took := time.Since(started)
		require.NoError(t, err, out)
		phase := veleroPhase(t, vc, veleroRestores, name+"-rg", "Completed", "PartiallyFailed", "Failed", "FailedValidation")
		require.Equal(t, "Completed", phase, "the controller restores cert-manager whole")
		at := standingOf(t, restoreTarget(t, vc.Config), b)
		assert.Empty(t, at.lost, "every ownership link kept")
		t.Logf("restoregraph's controller: cert-manager restored in %s (%s): %d of the backup's %d objects there, ownership links kept / wrong / lost %d / %d / %d",
			took.Round(10*time.Millisecond), phase, len(at.present), len(b.Manifest().Items()), at.kept, at.wrong, len(at.lost))
	})

	// Velero's restore of its own backup, by the Velero server of another fresh cluster,
	// for the table beside restoregraph's.
	t.Run("velero", func(t *testing.T) {
		t.Parallel()
		vc := veleroCluster(t)
		require.NoError(t, vc.Schedule(ctx))
		v, err := vc.StartVelero(ctx, s, harness.VeleroOptions{Features: []string{"EnableAPIGroupVersions"}, ReadOnly: true})
		require.NoError(t, err)
		veleroPhase(t, vc, veleroBackups, name, "Completed")
		started := time.Now()
		out, err := v.Run(ctx, "restore", "create", name+"-restore", "--from-backup", name, "--wait")
		took := time.Since(started)
		require.NoError(t, err, out)
		phase := veleroPhase(t, vc, veleroRestores, name+"-restore", "Completed", "PartiallyFailed", "Failed", "FailedValidation")
		vc.StopVelero()
		at := standingOf(t, restoreTarget(t, vc.Config), b)
		t.Logf("Velero %s: cert-manager restored in %s (%s): %d of the backup's %d objects there, ownership links kept / wrong / lost %d / %d / %d",
			veleroVersionOf(t, v), took.Round(10*time.Millisecond), phase, len(at.present), len(b.Manifest().Items()), at.kept, at.wrong, len(at.lost))
	})
}

// restoreCertManager restores Velero's backup of cert-manager (tarball, read as b) with
// the command into a fresh cluster, and checks that it is whole.
func restoreCertManager(t *testing.T, bin, tarball string, b *archive.Backup) {
	ctx := context.Background()
	dst := veleroCluster(t)
	require.NoError(t, dst.Schedule(ctx))
	run, err := clirun.StartEnv(nil, bin, "restore", "--backup", tarball, "--kubeconfig", dst.Kubeconfig, "--item-timeout", "2m", "-o", "json")
	require.NoError(t, err, "restoregraph restores Velero's backup of cert-manager whole (exit 0): %s", run.Stderr)
	var report restoreReport
	require.NoError(t, json.Unmarshal(run.Stdout, &report))
	res := map[string]restore.ObjectResult{}
	for _, o := range report.Objects {
		res[o.Kind+"/"+o.Namespace+"/"+o.Name] = o
	}
	backend, validating := res["Deployment/cert-manager/cert-manager-webhook"], res["ValidatingWebhookConfiguration//cert-manager-webhook"]
	for _, w := range []string{"ValidatingWebhookConfiguration//cert-manager-webhook", "MutatingWebhookConfiguration//cert-manager-webhook"} {
		require.Equal(t, restore.Restored, res[w].Status, w)
		assert.False(t, res[w].Created.Before(backend.Ready), "%s after its backend is Available", w)
	}
	for _, c := range []string{"Certificate/sandbox/web-tls", "Certificate/cert-manager/my-selfsigned-ca", "Issuer/sandbox/sandbox-selfsigned",
		"ClusterIssuer//selfsigned-issuer", "ClusterIssuer//my-ca-issuer"} {
		assert.Equal(t, restore.Restored, res[c].Status, c)
		assert.False(t, validating.Created.Before(res[c].Ready), "%s before the webhooks", c)
	}

	// Every object there, or left to the target's controllers, or replaced by them (a
	// ReplicaSet's Pod, whose ReplicaSet made its own first); verify holds.
	rt := restoreTarget(t, dst.Config)
	at := standingOf(t, rt, b)
	left := report.leftToTarget()
	verdicts, problems, replaced := verifyTarget(t, tarball, dst.Kubeconfig)
	for _, it := range b.Manifest().Items() {
		if _, ok := at.present[it.ID()]; !ok && !left[it.ID()] && !replaced[it.ID()] {
			t.Errorf("%s: in Velero's backup, not restored", it)
		}
	}
	assert.Empty(t, problems, "verify holds")
	assert.Empty(t, at.lost, "every ownership link kept")
	assert.Zero(t, at.wrong)
	t.Logf("restoregraph: %d of the backup's %d objects there, ownership links kept / wrong / lost %d / %d / %d",
		len(at.present), len(b.Manifest().Items()), at.kept, at.wrong, len(at.lost))
	t.Logf("cert-manager %s from its chart: %d objects in Velero's backup, restored by the command in %s (%v); verify: %v",
		platformVersion(t, "cert-manager"), len(b.Manifest().Items()), run.Took.Round(10*time.Millisecond), report.Summary, verdicts)
}

// platformVersion is the version of the platform's module its rendered manifests say
// they came from.
func platformVersion(t testing.TB, name string) string {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "platforms", name+".yaml"))
	require.NoError(t, err)
	head, _, _ := strings.Cut(string(data), "\n")
	if f := strings.Fields(head); len(f) > 2 {
		return strings.TrimSuffix(f[2], ":")
	}
	return ""
}
