package deploy

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "write restoregraph.yaml again from the chart")

// objects parses rendered manifests into objects by kind and name.
func objects(t *testing.T, rendered []byte) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, doc := range strings.Split(string(rendered), "\n---\n") {
		var obj map[string]any
		require.NoError(t, yaml.UnmarshalStrict([]byte(strings.TrimPrefix(doc, "---\n")), &obj))
		if obj == nil {
			continue
		}
		meta := obj["metadata"].(map[string]any)
		out[obj["kind"].(string)+"/"+meta["name"].(string)] = obj
	}
	return out
}

// restoregraph.yaml is the chart rendered with its default values, for kubectl.
func TestRenderedIsCurrent(t *testing.T) {
	rendered, err := Render("chart", Default, nil)
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.WriteFile("restoregraph.yaml", rendered, 0o644))
	}
	current, err := os.ReadFile("restoregraph.yaml")
	require.NoError(t, err)
	assert.Equal(t, string(rendered), string(current), "restoregraph.yaml is not the chart rendered: go test ./... -run TestRenderedIsCurrent -update")
}

// Helm's own linter finds nothing to say of the chart.
func TestChartLints(t *testing.T) {
	linter := lint.RunAll("chart", nil, Default.Namespace)
	for _, m := range linter.Messages {
		assert.Less(t, m.Severity, support.WarningSev, "%s", m)
	}
}

// By default: two replicas in the release's namespace, a PodDisruptionBudget keeping
// one, the AWS plugin copied in and Velero's command in the image run for its actions,
// the image of the chart's version running as 65532 on a read-only root file system,
// the RBAC of the controller, and no ServiceMonitor.
// Values change each: replicas, the plugins' init containers, the image, Velero's
// command in it, a ServiceMonitor with its labels, the admission namespace, Restores
// carried out as whoever created them.
func TestChartValues(t *testing.T) {
	objs := objects(t, must(Render("chart", Default, nil)))
	deployment := objs["Deployment/restoregraph"]
	require.NotNil(t, deployment)
	spec := deployment["spec"].(map[string]any)
	assert.EqualValues(t, 2, spec["replicas"])
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	assert.Equal(t, "restoregraph", pod["serviceAccountName"])
	assert.EqualValues(t, 65532, pod["securityContext"].(map[string]any)["runAsUser"])
	controller := pod["containers"].([]any)[0].(map[string]any)
	assert.Equal(t, "restoregraph:v0.1.0", controller["image"], "the chart's appVersion")
	assert.Equal(t, true, controller["securityContext"].(map[string]any)["readOnlyRootFilesystem"])
	assert.Subset(t, controller["args"], []any{"controller", "--plugins=/plugins", "--plugin=/velero", "--velero-namespace=velero",
		"--admission-namespace=restoregraph-admission", "--identity=$(POD_NAME)", "-v"})
	inits := pod["initContainers"].([]any)
	require.Len(t, inits, 1)
	assert.Equal(t, "velero/velero-plugin-for-aws:v1.14.3", inits[0].(map[string]any)["image"])
	assert.EqualValues(t, 1, objs["PodDisruptionBudget/restoregraph"]["spec"].(map[string]any)["minAvailable"])
	for _, name := range []string{"ServiceAccount/restoregraph", "Role/restoregraph-controller", "RoleBinding/restoregraph-controller",
		"Namespace/restoregraph-admission", "Role/restoregraph-admission", "RoleBinding/restoregraph-admission",
		"ClusterRole/restoregraph-restorer", "ClusterRoleBinding/restoregraph-restorer"} {
		assert.Contains(t, objs, name)
	}
	assert.NotContains(t, objs, "ServiceMonitor/restoregraph")
	assert.Len(t, objs, 10)

	objs = objects(t, must(Render("chart", Release{Name: "rg", Namespace: "backup"}, map[string]any{
		"replicas": 3,
		"image":    map[string]any{"repository": "registry.example/restoregraph", "tag": "v9"},
		"plugins": []any{
			map[string]any{"name": "velero-plugin-for-gcp", "image": "velero/velero-plugin-for-gcp:v1.14.0"},
			map[string]any{"name": "velero-plugin-for-csi", "image": "example/csi:v1"},
		},
		"admissionNamespace": "rg-admission",
		"veleroCommand":      "",
		"verbosity":          2,
		"asRequester":        true,
		"metrics":            map[string]any{"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}}},
	})))
	deployment = objs["Deployment/rg-restoregraph"]
	require.NotNil(t, deployment, "named for the release")
	spec = deployment["spec"].(map[string]any)
	assert.EqualValues(t, 3, spec["replicas"])
	pod = spec["template"].(map[string]any)["spec"].(map[string]any)
	controller = pod["containers"].([]any)[0].(map[string]any)
	assert.Equal(t, "registry.example/restoregraph:v9", controller["image"])
	assert.Subset(t, controller["args"], []any{"--velero-namespace=backup", "--admission-namespace=rg-admission", "-vv"})
	for _, a := range controller["args"].([]any) {
		assert.NotContains(t, a, "--plugin=", "no Velero command: an image without one")
	}
	var images []any
	for _, c := range pod["initContainers"].([]any) {
		images = append(images, c.(map[string]any)["image"])
	}
	assert.Equal(t, []any{"velero/velero-plugin-for-gcp:v1.14.0", "example/csi:v1"}, images)
	monitor := objs["ServiceMonitor/rg-restoregraph"]
	require.NotNil(t, monitor)
	assert.Equal(t, "prometheus", monitor["metadata"].(map[string]any)["labels"].(map[string]any)["release"])
	assert.Contains(t, objs, "Service/rg-restoregraph-metrics")
	assert.Contains(t, objs, "Role/rg-restoregraph-admission")
	assert.Equal(t, "rg-admission", objs["Role/rg-restoregraph-admission"]["metadata"].(map[string]any)["namespace"])
	// Restores carried out as whoever created them: the policy that records who did, its
	// binding, and the right to impersonate them.
	assert.Contains(t, controller["args"], "--as-requester")
	for _, name := range []string{"MutatingAdmissionPolicy/restoregraph-requester", "MutatingAdmissionPolicyBinding/restoregraph-requester",
		"ClusterRole/rg-restoregraph-requester", "ClusterRoleBinding/rg-restoregraph-requester"} {
		assert.Contains(t, objs, name)
	}
	rules := objs["ClusterRole/rg-restoregraph-requester"]["rules"].([]any)
	assert.Equal(t, map[string]any{"apiGroups": []any{""}, "resources": []any{"users", "groups"}, "verbs": []any{"impersonate"}}, rules[0])
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
