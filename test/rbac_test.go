package test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/restore"
)

// TestABindingRefusedForARoleNotThereSaysWhy: a user who may manage a namespace's
// RoleBindings (but not bind or escalate roles) restores a RoleBinding whose Role is
// neither in the backup nor in the cluster. The real API server looks the
// Role up to check the user holds its rights, and answers NotFound under the binding's
// resource and the Role's name; the restore's failure names the Role and says why it
// was looked up.
func TestABindingRefusedForARoleNotThereSaysWhy(t *testing.T) {
	ctx := context.Background()
	const ns = "rbac-refusal"
	cs, err := kubernetes.NewForConfig(cfg())
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "binder"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "binder"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "namespace-admin"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "binder"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	var buf bytes.Buffer
	w, err := archive.NewWriter(&buf, archive.Format11)
	require.NoError(t, err)
	binding := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": "readers", "namespace": ns, "uid": "uid-readers"},
		"subjects": []any{map[string]any{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "someone"}},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}}}
	require.NoError(t, w.Add(binding, "rolebindings", true))
	require.NoError(t, w.Close())
	b, err := archive.Read(ctx, &buf, archive.Options{})
	require.NoError(t, err)

	asAdmin := cfg()
	asAdmin.Impersonate.UserName = "namespace-admin"
	rep, err := restore.Run(ctx, b, restoreTarget(t, asAdmin), restore.PlanOptions{}, restore.RunOptions{ItemTimeout: 30 * time.Second})
	require.NoError(t, err)
	var res restore.ObjectResult
	for o := range rep.Objects() {
		res = o
	}
	require.Equal(t, restore.Failed, res.Status, "summary %v", rep.Summary)
	assert.Contains(t, res.Reason, `rolebindings.rbac.authorization.k8s.io "reader" not found: the Role "reader" it binds is not there`,
		"the server's NotFound, under the binding's resource and the Role's name, and what it means")
	assert.Contains(t, res.Reason, "since that user may not bind it (no bind or escalate on roles.rbac.authorization.k8s.io)")
}
