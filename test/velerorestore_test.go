package test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/restoregraph/restoregraph/test/harness"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// restoreCreateFlags are velero restore create's options restoregraph takes from a
// Restore object: a namespace in, another out, mapped; cluster-scoped resources in;
// Secrets out; the objects of three label selectors, one of them the CRDs' (Velero's
// orLabelSelectors); the status of Machines and nothing else's (the backup holds none
// of theirs: the restore's unit tests hold status); Velero's update policy; node ports
// kept; an item operation timeout; resource modifiers from a ConfigMap.
var restoreCreateFlags = []string{"--from-backup", "shop-and-fleet",
	"--include-namespaces", "fleet-00", "--exclude-namespaces", "shop", "--namespace-mappings", "fleet-00:dr-00", "--include-cluster-resources=true",
	"--exclude-resources", "secrets",
	"--or-selector", "cluster.x-k8s.io/control-plane or cluster.x-k8s.io/deployment-name=workload-00-md-0 or cluster.x-k8s.io/provider in (cluster,bootstrap,infrastructure)",
	"--status-include-resources", "machines.cluster.x-k8s.io",
	"--existing-resource-policy", "update", "--preserve-nodeports", "--item-operation-timeout", "1h",
	"--resource-modifier-configmap", "dr-modifiers"}

const restoreObjectModifiers = `
version: v1
resourceModifierRules:
- conditions: {groupResource: machines.cluster.x-k8s.io}
  mergePatches:
  - patchData: '{"metadata": {"annotations": {"restored-into": "dr"}}}'
`

// capiResources are the CAPI resources of the fleet's namespace.
var capiResources = []schema.GroupVersionResource{
	{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "clusters"},
	{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machines"},
	{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machinesets"},
	{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machinedeployments"},
	{Group: "bootstrap.cluster.x-k8s.io", Version: "v1beta1", Resource: "kubeadmconfigs"},
	{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Resource: "dockermachines"},
	{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta1", Resource: "kubeadmcontrolplanes"},
	{Version: "v1", Resource: "secrets"},
	{Version: "v1", Resource: "configmaps"},
}

// TestVeleroRestoreObjectSideBySide gives one velero restore create command to the real
// Velero server, and the Restore object the same command writes (-o yaml) to
// restoregraph's --from-velero-restore, each restoring the backup Velero wrote into a
// cluster of its own; what each restored is compared object by object, and so are the
// status and the modifiers' annotation the spec asks for. A Restore with a field
// restoregraph does not do (resourcePolicy) is refused, naming it, before anything is
// restored.
func TestVeleroRestoreObjectSideBySide(t *testing.T) {
	t.Parallel() // its own control planes and S3 server: beside the other tests that have theirs
	ctx := context.Background()
	const name = fixtureBackup
	_, vc, v, _ := veleroWithFixture(t, harness.VeleroOptions{Features: []string{"EnableAPIGroupVersions"}, ReadOnly: true})
	modifiersConfigMap(t, vc, "dr-modifiers", restoreObjectModifiers)
	object, err := v.Run(ctx, append([]string{"restore", "create", "dr"}, append(restoreCreateFlags, "-o", "yaml")...)...)
	require.NoError(t, err, object)
	file := filepath.Join(t.TempDir(), "dr.yaml")
	require.NoError(t, os.WriteFile(file, []byte(object), 0o644))
	t.Logf("the Restore velero restore create writes:\n%s", object)

	out, err := v.Run(ctx, append([]string{"restore", "create", "dr-velero"}, append(restoreCreateFlags, "--wait")...)...)
	require.NoError(t, err, out)
	phase := veleroPhase(t, vc, veleroRestores, "dr-velero", "Completed", "PartiallyFailed", "Failed", "FailedValidation")
	if phase != "Completed" {
		logs, _ := v.Run(ctx, "restore", "logs", "dr-velero")
		t.Logf("velero restore logs:\n%s", logs)
	}
	require.Equal(t, "Completed", phase)

	rc := veleroCluster(t)
	modifiersConfigMap(t, rc, "dr-modifiers", restoreObjectModifiers)
	code, text := cli(t, "restore", "--from-velero-restore", file, "--plugins", v.PluginDir(), "--source-kubeconfig", vc.Kubeconfig,
		"--kubeconfig", rc.Kubeconfig, "--record-in-velero=false")
	require.Equal(t, 0, code, text)

	vd, err := dynamic.NewForConfig(vc.Config)
	require.NoError(t, err)
	rd, err := dynamic.NewForConfig(rc.Config)
	require.NoError(t, err)
	restored := func(d dynamic.Interface, gvr schema.GroupVersionResource) map[string]map[string]any {
		list, err := d.Resource(gvr).Namespace("dr-00").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil // the CRD was not restored
		}
		out := map[string]map[string]any{}
		for _, o := range list.Items {
			if o.GetName() != "kube-root-ca.crt" { // the target's own
				out[o.GetName()] = o.Object
			}
		}
		return out
	}
	total := 0
	for _, gvr := range capiResources {
		velero, rg := restored(vd, gvr), restored(rd, gvr)
		assert.ElementsMatch(t, keys(velero), keys(rg), "%s: restoregraph restores what Velero restores", gvr.Resource)
		total += len(velero)
		for name, vo := range velero {
			ro := rg[name]
			if ro == nil {
				continue
			}
			assert.Equal(t, fieldAt(vo, []string{"status"}), fieldAt(ro, []string{"status"}), "%s %s: the status, as Velero's", gvr.Resource, name)
			assert.Equal(t, fieldAt(vo, []string{"metadata", "annotations", "restored-into"}), fieldAt(ro, []string{"metadata", "annotations", "restored-into"}),
				"%s %s: the modifiers, as Velero's", gvr.Resource, name)
		}
	}
	t.Logf("%d objects restored by each", total)
	machines := restored(rd, capiResources[1])
	assert.ElementsMatch(t, []string{"workload-00-control-plane-0", "workload-00-control-plane-1", "workload-00-control-plane-2"}, keys(machines),
		"the control plane's Machines, by the first or-selector (the workers' carry no deployment-name)")
	for name, m := range machines {
		assert.Equal(t, "dr", fieldAt(m, []string{"metadata", "annotations", "restored-into"}), name)
	}
	assert.Len(t, restored(rd, capiResources[2]), 1, "the MachineSet, by the second")
	assert.Empty(t, restored(rd, capiResources[0]), "the Cluster matches no selector")
	assert.Empty(t, restored(rd, capiResources[7]), "Secrets are excluded")

	// Init hooks of the spec, by a Restore object both are given: Velero's server
	// (created in its namespace) and restoregraph. Velero's exec hooks cannot run here
	// (no kubelet answers pods/exec), and its CLI has no hook flags.
	hooked := map[string]any{"apiVersion": "velero.io/v1", "kind": "Restore", "metadata": map[string]any{"name": "hooks", "namespace": "velero"},
		"spec": map[string]any{"backupName": name, "includedNamespaces": []any{"shop"}, "includedResources": []any{"pods", "serviceaccounts"},
			"namespaceMapping": map[string]any{"shop": "shop-hooks"},
			"hooks": map[string]any{"resources": []any{map[string]any{"name": "seed", "includedNamespaces": []any{"shop-hooks"},
				"labelSelector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
				"postHooks": []any{map[string]any{"init": map[string]any{"initContainers": []any{
					map[string]any{"name": "seed", "image": "busybox:1.36", "command": []any{"sh", "-c", "seed-cache"}}}}}}}}}}}
	_, err = vd.Resource(veleroRestores).Namespace("velero").Create(ctx, &unstructured.Unstructured{Object: hooked}, metav1.CreateOptions{})
	require.NoError(t, err)
	phase = veleroPhase(t, vc, veleroRestores, "hooks", "Completed", "PartiallyFailed", "Failed", "FailedValidation")
	if phase != "Completed" {
		logs, _ := v.Run(ctx, "restore", "logs", "hooks")
		t.Logf("velero restore logs:\n%s", logs)
	}
	require.Equal(t, "Completed", phase)
	hookFile := filepath.Join(t.TempDir(), "hooks.yaml")
	data, err := yaml.Marshal(hooked)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(hookFile, data, 0o644))
	code, text = cli(t, "restore", "--from-velero-restore", hookFile, "--plugins", v.PluginDir(), "--source-kubeconfig", vc.Kubeconfig,
		"--kubeconfig", rc.Kubeconfig, "--record-in-velero=false")
	require.Equal(t, 0, code, text)
	initContainers := func(d dynamic.Interface) map[string][]any {
		list, err := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("shop-hooks").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		out := map[string][]any{}
		for _, p := range list.Items {
			cs, _, _ := unstructured.NestedSlice(p.Object, "spec", "initContainers")
			var names []any
			for _, c := range cs {
				names = append(names, c.(map[string]any)["name"])
			}
			out[p.GetName()] = names
		}
		return out
	}
	veleroInits, rgInits := initContainers(vd), initContainers(rd)
	t.Logf("init containers: Velero %v, restoregraph %v", veleroInits, rgInits)
	assert.Equal(t, veleroInits, rgInits, "the same Pods with the same init containers")
	for pod, names := range rgInits {
		if strings.HasPrefix(pod, "web-") {
			assert.Equal(t, []any{"seed"}, names, pod)
		} else {
			assert.Empty(t, names, pod)
		}
	}

	// A field restoregraph does not do is named, and nothing is restored.
	volumes := filepath.Join(t.TempDir(), "volumes.yaml")
	var withVolumes map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(object), &withVolumes))
	withVolumes["spec"].(map[string]any)["resourcePolicy"] = map[string]any{"kind": "configmap", "name": "volume-policy"}
	data, err = yaml.Marshal(withVolumes)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(volumes, data, 0o644))
	code, text = cli(t, "restore", "--from-velero-restore", volumes, "--plugins", v.PluginDir(), "--source-kubeconfig", vc.Kubeconfig,
		"--kubeconfig", rc.Kubeconfig, "--record-in-velero=false")
	assert.Equal(t, 2, code, text)
	assert.Contains(t, text, "spec.resourcePolicy")
}

func keys(m map[string]map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
