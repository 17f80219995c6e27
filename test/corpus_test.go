package test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/clirun"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
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

// corpusEntry is a backup of real platforms: installed from their rendered manifests,
// used as their documentation shows, and backed up by the real Velero server.
type corpusEntry struct {
	name string
	// platforms are the rendered manifests (testdata/platforms), installed in order:
	// what one needs first (cert-manager before Cluster API), each into its own
	// namespaces or, for a chart, the namespace of the platform's name.
	platforms []string
	// use is what the platforms' documentation creates once they are installed, in the
	// namespaces it names, which are backed up with the platforms' own.
	use        string
	namespaces []string
	// resources are the custom resources use creates (Kind/namespace/name), which every
	// restore must hold; webhooks the webhook configurations (Kind//name), each with
	// the Deployment that serves it and the resources it intercepts, which the command
	// must create it after.
	resources []string
	webhooks  map[string]webhookOf
}

// webhookOf is what a webhook configuration of the corpus needs before it: the
// Deployment that serves it (namespace/name), Available, and the resources of the
// entry it intercepts (Kind/namespace/name), made.
type webhookOf struct {
	backend     string
	intercepted []string
}

var certManagerEntry = corpusEntry{
	name: "cert-manager", platforms: []string{"cert-manager"}, use: certManagerUse, namespaces: []string{"sandbox"},
	resources: certManagerResources,
	webhooks: map[string]webhookOf{
		"ValidatingWebhookConfiguration//cert-manager-webhook": {"cert-manager/cert-manager-webhook", certManagerResources},
		"MutatingWebhookConfiguration//cert-manager-webhook":   {"cert-manager/cert-manager-webhook", nil}, // CertificateRequests alone
	},
}

var certManagerResources = []string{"Certificate/sandbox/web-tls", "Certificate/cert-manager/my-selfsigned-ca",
	"Issuer/sandbox/sandbox-selfsigned", "ClusterIssuer//selfsigned-issuer", "ClusterIssuer//my-ca-issuer"}

// clusterAPIUse is what Cluster API's quick start creates for a workload cluster, of
// the kinds the core and kubeadm providers define (the infrastructure provider's own,
// which they reference, are not installed).
const clusterAPIUse = `
apiVersion: v1
kind: Namespace
metadata: {name: quickstart}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: capi-quickstart, namespace: quickstart}
spec:
  clusterNetwork:
    pods: {cidrBlocks: [192.168.0.0/16]}
    serviceDomain: cluster.local
  controlPlaneRef: {apiGroup: controlplane.cluster.x-k8s.io, kind: KubeadmControlPlane, name: capi-quickstart-control-plane}
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerCluster, name: capi-quickstart}
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta2
kind: KubeadmControlPlane
metadata: {name: capi-quickstart-control-plane, namespace: quickstart}
spec:
  replicas: 1
  version: v1.34.0
  machineTemplate:
    spec:
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerMachineTemplate, name: capi-quickstart-control-plane}
  kubeadmConfigSpec:
    initConfiguration:
      nodeRegistration: {kubeletExtraArgs: [{name: eviction-hard, value: "nodefs.available<0%"}]}
---
apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
kind: KubeadmConfigTemplate
metadata: {name: capi-quickstart-md-0, namespace: quickstart}
spec:
  template:
    spec:
      joinConfiguration:
        nodeRegistration: {kubeletExtraArgs: [{name: eviction-hard, value: "nodefs.available<0%"}]}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {name: capi-quickstart-md-0, namespace: quickstart}
spec:
  clusterName: capi-quickstart
  replicas: 1
  selector: {matchLabels: {cluster.x-k8s.io/cluster-name: capi-quickstart}}
  template:
    metadata:
      labels: {cluster.x-k8s.io/cluster-name: capi-quickstart}
    spec:
      clusterName: capi-quickstart
      version: v1.34.0
      bootstrap:
        configRef: {apiGroup: bootstrap.cluster.x-k8s.io, kind: KubeadmConfigTemplate, name: capi-quickstart-md-0}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerMachineTemplate, name: capi-quickstart-md-0}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineHealthCheck
metadata: {name: capi-quickstart-md-0, namespace: quickstart}
spec:
  clusterName: capi-quickstart
  selector: {matchLabels: {cluster.x-k8s.io/cluster-name: capi-quickstart}}
`

// clusterAPIEntry is Cluster API beside the cert-manager it needs (which issues its
// webhooks' certificates): CRDs served through a conversion webhook, and webhook
// configurations of three providers that fail closed.
var clusterAPIEntry = corpusEntry{
	name: "cluster-api", platforms: []string{"cert-manager", "cluster-api"}, use: clusterAPIUse, namespaces: []string{"quickstart"},
	resources: slices.Concat(capiCore, capiBootstrap, capiControlPlane, capiCerts),
	webhooks: map[string]webhookOf{
		"ValidatingWebhookConfiguration//cert-manager-webhook":                                        {"cert-manager/cert-manager-webhook", capiCerts},
		"MutatingWebhookConfiguration//cert-manager-webhook":                                          {"cert-manager/cert-manager-webhook", nil},
		"ValidatingWebhookConfiguration//capi-validating-webhook-configuration":                       {"capi-system/capi-controller-manager", capiCore},
		"MutatingWebhookConfiguration//capi-mutating-webhook-configuration":                           {"capi-system/capi-controller-manager", capiCore},
		"ValidatingWebhookConfiguration//capi-kubeadm-bootstrap-validating-webhook-configuration":     {"capi-kubeadm-bootstrap-system/capi-kubeadm-bootstrap-controller-manager", capiBootstrap},
		"MutatingWebhookConfiguration//capi-kubeadm-bootstrap-mutating-webhook-configuration":         {"capi-kubeadm-bootstrap-system/capi-kubeadm-bootstrap-controller-manager", capiBootstrap},
		"MutatingWebhookConfiguration//capi-kubeadm-control-plane-mutating-webhook-configuration":     {"capi-kubeadm-control-plane-system/capi-kubeadm-control-plane-controller-manager", capiControlPlane},
		"ValidatingWebhookConfiguration//capi-kubeadm-control-plane-validating-webhook-configuration": {"capi-kubeadm-control-plane-system/capi-kubeadm-control-plane-controller-manager", capiControlPlane},
	},
}

// The resources of Cluster API's quick start, by the provider whose webhooks intercept
// them, and the certificates cert-manager issues its webhooks.
var (
	capiCore = []string{"Cluster/quickstart/capi-quickstart", "MachineDeployment/quickstart/capi-quickstart-md-0",
		"MachineHealthCheck/quickstart/capi-quickstart-md-0"}
	capiBootstrap    = []string{"KubeadmConfigTemplate/quickstart/capi-quickstart-md-0"}
	capiControlPlane = []string{"KubeadmControlPlane/quickstart/capi-quickstart-control-plane"}
	capiCerts        = []string{"Certificate/capi-system/capi-serving-cert", "Issuer/capi-system/capi-selfsigned-issuer",
		"Certificate/capi-kubeadm-bootstrap-system/capi-kubeadm-bootstrap-serving-cert",
		"Certificate/capi-kubeadm-control-plane-system/capi-kubeadm-control-plane-serving-cert"}
)

// kyvernoUse is what Kyverno's documentation creates: a policy for the whole cluster,
// a namespace's policy, an exception to it, and a cleanup policy.
const kyvernoUse = `
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: require-labels}
spec:
  rules:
  - name: check-team
    match:
      any:
      - resources: {kinds: [Pod]}
    validate:
      failureAction: Enforce
      message: "label 'team' is required"
      pattern: {metadata: {labels: {team: "?*"}}}
---
apiVersion: kyverno.io/v1
kind: Policy
metadata: {name: add-owner, namespace: team-a}
spec:
  rules:
  - name: add-owner-label
    match:
      any:
      - resources: {kinds: [ConfigMap]}
    mutate:
      patchStrategicMerge:
        metadata: {labels: {owner: team-a}}
---
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: allow-debug, namespace: team-a}
spec:
  exceptions:
  - policyName: require-labels
    ruleNames: [check-team]
  match:
    any:
    - resources: {kinds: [Pod], namespaces: [team-a], names: [debug-*]}
---
apiVersion: kyverno.io/v2
kind: ClusterCleanupPolicy
metadata: {name: clean-debug}
spec:
  match:
    any:
    - resources: {kinds: [Pod], names: [debug-*]}
  schedule: "*/5 * * * *"
`

// kyvernoEntry is Kyverno: many CRDs and four controllers.
var kyvernoEntry = corpusEntry{
	name: "kyverno", platforms: []string{"kyverno"}, use: kyvernoUse, namespaces: []string{"team-a"},
	resources: []string{"ClusterPolicy//require-labels", "Policy/team-a/add-owner", "PolicyException/team-a/allow-debug",
		"ClusterCleanupPolicy//clean-debug"},
}

// corpus is every entry, for make bench-integration.
var corpus = []corpusEntry{certManagerEntry, clusterAPIEntry, kyvernoEntry}

// corpusBackup installs e's platforms into a cluster whose controllers and kwok run
// their Deployments, creates what their documentation creates, and has the real
// Velero server back it all up into s: the path of the backup's tarball, and the
// backup read. The webhook configurations are created last, as running platforms
// have them: from there on their resources go through webhooks nothing answers.
func corpusBackup(t testing.TB, s *harness.S3, e corpusEntry) (string, *archive.Backup) {
	ctx := context.Background()
	src := veleroCluster(t)
	require.NoError(t, src.Schedule(ctx))
	namespaces := slices.Clone(e.namespaces)
	resources := []string{"namespaces", "customresourcedefinitions", "clusterroles", "clusterrolebindings", "roles", "rolebindings",
		"serviceaccounts", "deployments", "replicasets", "pods", "services", "configmaps", "secrets",
		"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}
	var webhooks []*unstructured.Unstructured
	for _, name := range e.platforms {
		var rest, deployments []*unstructured.Unstructured
		chart := true // a chart's namespaced objects name no namespace: its release's, the platform's name
		for _, obj := range platformObjects(t, name) {
			switch obj.GetKind() {
			case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
				webhooks = append(webhooks, obj)
				continue
			case "CustomResourceDefinition":
				plural, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "plural")
				group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
				resources = append(resources, plural+"."+group)
			case "Deployment":
				deployments = append(deployments, obj)
			case "Namespace":
				chart = false
				namespaces = append(namespaces, obj.GetName())
			}
			rest = append(rest, obj)
		}
		release := ""
		if chart {
			release = name
			namespaces = append(namespaces, name)
			createAll(t, src, "", []*unstructured.Unstructured{{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
				"metadata": map[string]any{"name": name}}}})
		}
		createAll(t, src, release, rest)
		for _, d := range deployments {
			ns := d.GetNamespace()
			if ns == "" {
				ns = release
			}
			waitAvailable(t, src, ns, d.GetName())
		}
	}
	applyYAML(t, src, e.use)
	createAll(t, src, "", webhooks)

	// The CRDs exist before the Velero server starts, which reads what is served once.
	v, err := src.StartVelero(ctx, s, harness.VeleroOptions{})
	require.NoError(t, err)
	slices.Sort(namespaces)
	out, err := v.Run(ctx, "backup", "create", e.name, "--include-namespaces", strings.Join(slices.Compact(namespaces), ","),
		"--include-cluster-resources=true", "--include-resources", strings.Join(resources, ","), "--wait")
	require.NoError(t, err, out)
	require.Equal(t, "Completed", veleroPhase(t, src, veleroBackups, e.name, "Completed", "PartiallyFailed", "Failed"), v.Log())
	src.StopVelero()
	tarball := filepath.Join(s.Path("backups/"+e.name), e.name+".tar.gz")
	b, err := archive.ReadFile(ctx, tarball, archive.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return tarball, b
}

// corpusFigures are what a restore of a corpus backup came to: how long it took, what
// it ended as, and what the target then holds of the backup.
type corpusFigures struct {
	took              time.Duration
	outcome           string
	present, backup   int
	kept, wrong, lost int
}

func (f corpusFigures) String() string {
	return fmt.Sprintf("%s in %s: %d of the backup's %d objects there, ownership links kept / wrong / lost %d / %d / %d",
		f.outcome, f.took.Round(10*time.Millisecond), f.present, f.backup, f.kept, f.wrong, f.lost)
}

func figuresOf(t testing.TB, c *harness.Cluster, b *archive.Backup, took time.Duration, outcome string) corpusFigures {
	at := standingOf(t, restoreTarget(t, c.Config), b)
	return corpusFigures{took: took, outcome: outcome, present: len(at.present), backup: len(b.Manifest().Items()),
		kept: at.kept, wrong: at.wrong, lost: len(at.lost)}
}

// restoreCorpusCLI restores a corpus backup (tarball, read as b) with the command into
// a fresh cluster, and checks that it is whole: exit 0, every object of the backup there
// or left to or made again by the target's controllers, verify holding, every ownership
// link kept, the documentation's resources restored, each webhook configuration created
// once its backend is Available and after the resources it would intercept.
func restoreCorpusCLI(t testing.TB, bin, tarball string, b *archive.Backup, e corpusEntry) corpusFigures {
	ctx := context.Background()
	dst := veleroCluster(t)
	require.NoError(t, dst.Schedule(ctx))
	run, err := clirun.StartEnv(nil, bin, "restore", "--backup", tarball, "--kubeconfig", dst.Kubeconfig, "--item-timeout", "2m", "-o", "json")
	require.NoError(t, err, "restoregraph restores Velero's backup of %s whole (exit 0): %s", e.name, run.Stderr)
	var report restoreReport
	require.NoError(t, json.Unmarshal(run.Stdout, &report))
	res := map[string]restore.ObjectResult{}
	byID := map[manifest.ID]restore.ObjectResult{}
	for _, o := range report.Objects {
		res[o.Kind+"/"+o.Namespace+"/"+o.Name] = o
		byID[refID(o.ObjectRef)] = o
	}
	for _, c := range e.resources {
		assert.Equal(t, restore.Restored, res[c].Status, c)
	}
	for w, of := range e.webhooks {
		require.Equal(t, restore.Restored, res[w].Status, w)
		assert.False(t, res[w].Created.Before(res["Deployment/"+of.backend].Ready), "%s after its backend %s is Available", w, of.backend)
		for _, c := range of.intercepted {
			assert.False(t, res[w].Created.Before(res[c].Ready), "%s before %s, which it intercepts", c, w)
		}
	}

	at := standingOf(t, restoreTarget(t, dst.Config), b)
	left := report.leftToTarget()
	verdicts, problems, replaced := verifyTarget(t, tarball, dst.Kubeconfig)
	for _, it := range b.Manifest().Items() {
		if _, ok := at.present[it.ID()]; !ok && !left[it.ID()] && !replaced[it.ID()] {
			o := byID[it.ID()]
			t.Errorf("%s: in Velero's backup, not there after the restore (%s %s %s)", it, o.Status, o.SkippedBy, o.Reason)
		}
	}
	assert.Empty(t, problems, "verify holds")
	assert.Empty(t, at.lost, "every ownership link kept")
	assert.Zero(t, at.wrong)
	f := figuresOf(t, dst, b, run.Took, fmt.Sprintf("exit 0 %v", report.Summary))
	t.Logf("restoregraph: %s; verify: %v", f, verdicts)
	return f
}

// restoreCorpusController restores a corpus backup by restoregraph's controller, in
// process as the chart's ServiceAccount, in place of Velero's restore controller beside
// a Velero server of a fresh cluster that has the backup: velero restore create,
// carried out by it, Completed, every ownership link kept.
func restoreCorpusController(t testing.TB, s *harness.S3, b *archive.Backup, e corpusEntry) corpusFigures {
	ctx := context.Background()
	vc := veleroCluster(t)
	require.NoError(t, vc.Schedule(ctx))
	v, err := vc.StartVelero(ctx, s, harness.VeleroOptions{ReadOnly: true, DisableControllers: harness.RestoreControllers})
	require.NoError(t, err)
	veleroPhase(t, vc, veleroBackups, e.name, "Completed")
	runController(t, vc, v.PluginDir(), controller.Config{Identity: "corpus", Logger: slog.New(slog.DiscardHandler)})
	started := time.Now()
	out, err := v.Run(ctx, "restore", "create", e.name+"-rg", "--from-backup", e.name, "--wait")
	took := time.Since(started)
	require.NoError(t, err, out)
	phase := veleroPhase(t, vc, veleroRestores, e.name+"-rg", "Completed", "PartiallyFailed", "Failed", "FailedValidation")
	vc.StopVelero() // one Velero server runs at a time
	require.Equal(t, "Completed", phase, "the controller restores %s whole", e.name)
	f := figuresOf(t, vc, b, took, phase)
	assert.Zero(t, f.lost, "every ownership link kept")
	t.Logf("restoregraph's controller: %s", f)
	return f
}

// restoreCorpusVelero restores a corpus backup by the Velero server of a fresh cluster,
// for the table beside restoregraph's.
func restoreCorpusVelero(t testing.TB, s *harness.S3, b *archive.Backup, e corpusEntry) corpusFigures {
	ctx := context.Background()
	vc := veleroCluster(t)
	require.NoError(t, vc.Schedule(ctx))
	v, err := vc.StartVelero(ctx, s, harness.VeleroOptions{ReadOnly: true})
	require.NoError(t, err)
	veleroPhase(t, vc, veleroBackups, e.name, "Completed")
	started := time.Now()
	out, err := v.Run(ctx, "restore", "create", e.name+"-restore", "--from-backup", e.name, "--wait")
	took := time.Since(started)
	require.NoError(t, err, out)
	phase := veleroPhase(t, vc, veleroRestores, e.name+"-restore", "Completed", "PartiallyFailed", "Failed", "FailedValidation")
	if phase != "Completed" {
		described, _ := v.Run(ctx, "restore", "describe", e.name+"-restore", "--details")
		_, errs, _ := strings.Cut(described, "Errors:")
		errs, _, _ = strings.Cut(errs, "Backup:")
		t.Logf("Velero's restore %s:%s", phase, strings.TrimRight(errs, "\n "))
	}
	vc.StopVelero()
	f := figuresOf(t, vc, b, took, phase)
	t.Logf("Velero %s: %s", veleroVersionOf(t, v), f)
	return f
}

// TestCertManagerRestoredWhole installs cert-manager from its own chart (rendered from
// its module by test/platforms) into a cluster whose controllers and kwok run its
// Deployments, creates what its documentation creates, has the real Velero server back
// it up, and restores Velero's backup into fresh clusters: with the command (exit 0,
// every object there, nothing refused by cert-manager's webhooks, which fail closed and
// whose backend answers nothing here: their configurations are created last, once the
// webhook's Deployment is Available); with the controller in place of Velero's restore
// controller (Completed); without the admission-webhooks rule (exit 1, refused, named);
// and by Velero, for the table. BenchmarkIntegrationVeleroPlatforms does the same for
// every platform of the corpus.
func TestCertManagerRestoredWhole(t *testing.T) {
	t.Parallel() // its own control planes and S3 server: beside the other tests that have theirs
	s, err := harness.StartS3(context.Background(), t.TempDir())
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	e := certManagerEntry
	tarball, b := corpusBackup(t, s, e)
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
		f := restoreCorpusCLI(t, bin, tarball, b, e)
		t.Logf("cert-manager %s from its chart, restored by the command: %s", platformVersion(t, "cert-manager"), f)
	})
	t.Run("controller", func(t *testing.T) {
		t.Parallel()
		restoreCorpusController(t, s, b, e)
	})
	t.Run("velero", func(t *testing.T) {
		t.Parallel()
		restoreCorpusVelero(t, s, b, e)
	})
}

// BenchmarkIntegrationVeleroPlatforms backs up each entry of the corpus with the real
// Velero server and restores it into fresh clusters, one after another: by the
// command, by restoregraph's controller, and by Velero; the figures are the ledger's.
func BenchmarkIntegrationVeleroPlatforms(b *testing.B) {
	bin, err := cliBinary()
	require.NoError(b, err)
	for _, e := range corpus {
		b.Run(e.name, func(b *testing.B) {
			for range b.N {
				s, err := harness.StartS3(context.Background(), b.TempDir())
				require.NoError(b, err)
				tarball, backup := corpusBackup(b, s, e)
				var versions []string
				for _, p := range e.platforms {
					versions = append(versions, p+" "+platformVersion(b, p))
				}
				cli := restoreCorpusCLI(b, bin, tarball, backup, e)
				ctl := restoreCorpusController(b, s, backup, e)
				vel := restoreCorpusVelero(b, s, backup, e)
				b.Logf("%s (%s), %d objects: restoregraph %s | controller %s | Velero %s", e.name, strings.Join(versions, ", "),
					len(backup.Manifest().Items()), cli, ctl, vel)
				b.ReportMetric(cli.took.Seconds(), "restoregraph-s")
				b.ReportMetric(ctl.took.Seconds(), "controller-s")
				b.ReportMetric(vel.took.Seconds(), "velero-s")
				s.Stop()
			}
		})
	}
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
