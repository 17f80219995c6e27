package test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// TestDeployManifestsAreAccepted: every object of deploy/ is accepted by the real API
// server as it would be applied (a server-side dry run: schema, defaults, validation,
// RBAC rules' form), into the namespaces they name.
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
	files, err := filepath.Glob("../deploy/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	kinds := map[string]int{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, doc := range strings.Split(string(data), "\n---\n") {
			var obj map[string]any
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &obj), file)
			u := &unstructured.Unstructured{Object: obj}
			gvk := u.GroupVersionKind()
			mapping, err := tgt.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			require.NoError(t, err, "%s: %s", file, gvk)
			client := tgt.Dynamic.Resource(mapping.Resource).Namespace(u.GetNamespace())
			_, err = client.Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
			if apierrors.IsAlreadyExists(err) {
				_, err = client.Update(ctx, u, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
			}
			require.NoError(t, err, "%s: %s %s", file, gvk.Kind, u.GetName())
			kinds[gvk.Kind]++
		}
	}
	assert.Equal(t, map[string]int{"ServiceAccount": 1, "Role": 2, "RoleBinding": 2, "Namespace": 1, "ClusterRole": 1, "ClusterRoleBinding": 1,
		"Deployment": 1, "PodDisruptionBudget": 1}, kinds)
}
