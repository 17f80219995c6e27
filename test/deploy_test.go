package test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
)

// TestDeployManifestsAreAccepted: every object of deploy/restoregraph.yaml (the Helm
// chart rendered with its default values, which the deploy module's test keeps current)
// is accepted by the real API server as it would be applied (a server-side dry run:
// schema, defaults, validation, RBAC rules' form), into the namespaces they name.
func TestDeployManifestsAreAccepted(t *testing.T) {
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(cfg())
	require.NoError(t, err)
	for _, ns := range []string{"velero", "restoregraph-admission"} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	tgt := restoreTarget(t, cfg())
	kinds := map[string]int{}
	eachManifest(t, tgt, "../deploy/restoregraph.yaml", func(client dynamic.ResourceInterface, u *unstructured.Unstructured) error {
		_, err := client.Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
		if apierrors.IsAlreadyExists(err) {
			_, err = client.Update(ctx, u, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
		}
		kinds[u.GetKind()]++
		return err
	})
	assert.Equal(t, map[string]int{"ServiceAccount": 1, "Role": 2, "RoleBinding": 2, "Namespace": 1, "ClusterRole": 1, "ClusterRoleBinding": 1,
		"Deployment": 1, "PodDisruptionBudget": 1}, kinds)
}

// chartRBAC is the ServiceAccount, namespaces and RBAC of deploy/restoregraph.yaml: what
// the controller runs as, without its Deployment.
func chartRBAC(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile("../deploy/restoregraph.yaml")
	require.NoError(t, err)
	var docs []string
	for _, doc := range strings.Split(strings.TrimPrefix(string(data), "---\n"), "\n---\n") {
		var obj struct{ Kind string }
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
		switch obj.Kind {
		case "ServiceAccount", "Namespace", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
			docs = append(docs, doc)
		}
	}
	require.Len(t, docs, 8)
	return strings.Join(docs, "\n---\n")
}

// chartAccount is the chart's ServiceAccount, which every controller the tests run runs
// as.
const chartAccount = "system:serviceaccount:velero:restoregraph"

// chartApplied holds the clusters the chart's RBAC is applied to.
var chartApplied sync.Map

// asChart applies the chart's ServiceAccount and RBAC to c, once, and returns c's client
// configuration acting as that ServiceAccount, with the chart's RBAC alone.
func asChart(t testing.TB, c *harness.Cluster) *rest.Config {
	t.Helper()
	if _, done := chartApplied.LoadOrStore(c, true); !done {
		tgt, err := restore.NewTarget(c.Config)
		require.NoError(t, err)
		for _, doc := range strings.Split(chartRBAC(t), "\n---\n") {
			obj := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal([]byte(doc), &obj.Object))
			gvk := obj.GroupVersionKind()
			m, err := tgt.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			require.NoError(t, err, gvk.String())
			_, err = tgt.Dynamic.Resource(m.Resource).Namespace(obj.GetNamespace()).Create(context.Background(), obj, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) { // the admission namespace, made by a restore before
				require.NoError(t, err, "%s %s", gvk.Kind, obj.GetName())
			}
		}
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: chartAccount}
	return cfg
}

// eachManifest hands apply each object of the YAML file's documents (read strictly),
// with the client of its resource in its namespace on tgt; an error apply returns fails
// the test, naming the object.
func eachManifest(t *testing.T, tgt restore.Target, file string, apply func(dynamic.ResourceInterface, *unstructured.Unstructured) error) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	for _, doc := range strings.Split(strings.TrimPrefix(string(data), "---\n"), "\n---\n") {
		var obj map[string]any
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &obj), file)
		u := &unstructured.Unstructured{Object: obj}
		gvk := u.GroupVersionKind()
		mapping, err := tgt.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		require.NoError(t, err, "%s: %s", file, gvk)
		require.NoError(t, apply(tgt.Dynamic.Resource(mapping.Resource).Namespace(u.GetNamespace()), u), "%s: %s %s", file, gvk.Kind, u.GetName())
	}
}
