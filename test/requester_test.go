package test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
	"github.com/restoregraph/restoregraph/velero"
	"github.com/restoregraph/restoregraph/velero/controller"
)

// TestControllerRestoresAsItsRequester: with the chart's requester policy installed
// (deploy/chart/files/requester-policy.yaml, a MutatingAdmissionPolicy), who creates a
// Restore is recorded on it, whatever the request said and whoever updates it later; the
// controller, built with AsRequester, carries a Restore out as that user. A namespace
// admin's Restore into their namespace completes; theirs into another namespace fails
// validation naming the right they lack, and nothing is written there.
func TestControllerRestoresAsItsRequester(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, vc, v, _ := veleroWithFixture(t, harness.VeleroOptions{DisableControllers: harness.RestoreControllers})
	admin, err := kubernetes.NewForConfig(vc.Config)
	require.NoError(t, err)
	tgt, err := restore.NewTarget(vc.Config)
	require.NoError(t, err)

	// The chart's policy, as it ships it.
	eachManifest(t, tgt, "../deploy/chart/files/requester-policy.yaml", func(client dynamic.ResourceInterface, u *unstructured.Unstructured) error {
		_, err := client.Create(ctx, u, metav1.CreateOptions{FieldValidation: "Strict"})
		return err
	})
	installed := time.Now()

	// alice administers namespace alice-shop (every right in it) and may create Restores.
	as := func(user string, groups ...string) dynamic.Interface {
		c := rest.CopyConfig(vc.Config)
		c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
		dyn, err := dynamic.NewForConfig(c)
		require.NoError(t, err)
		return dyn
	}
	for _, ns := range []string{"alice-shop", "bob-shop"} {
		_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	grant := func(ns, name string, rules []rbacv1.PolicyRule) {
		_, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "shop-admins"}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	grant("alice-shop", "namespace-admin", []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}})
	grant("velero", "restore-creator", []rbacv1.PolicyRule{{APIGroups: []string{"velero.io"}, Resources: []string{"restores"},
		Verbs: []string{"get", "create", "update"}}})
	alice := as("alice", "shop-admins").Resource(veleroRestores).Namespace("velero")

	// The policy is enforced once the API server has loaded it: alice's Restore names
	// her, whatever she wrote in it.
	forged := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "velero.io/v1", "kind": "Restore",
			"metadata": map[string]any{"name": name, "namespace": "velero", "annotations": map[string]any{
				controller.RequestedByAnnotation: "system:admin", controller.RequestedByGroupsAnnotation: "system:masters"}},
			"spec": spec}}
	}
	probe := 0
	require.Eventually(t, func() bool {
		probe++
		o, err := alice.Create(ctx, forged("probe-"+strings.Repeat("x", probe), map[string]any{"backupName": "none"}), metav1.CreateOptions{})
		return err == nil && o.GetAnnotations()[controller.RequestedByAnnotation] == "alice"
	}, 30*time.Second, 100*time.Millisecond, "the policy records alice")
	// The controller trusts a record only once the policy has surely been enforced.
	time.Sleep(time.Until(installed.Add(11 * time.Second)))

	host, cmds := pluginHost(t, v.PluginDir())
	dyn, err := dynamic.NewForConfig(vc.Config)
	require.NoError(t, err)
	var logs syncBuffer
	c, err := controller.New(controller.Config{
		Velero:     velero.Client{Dynamic: dyn, Secrets: admin.CoreV1(), Namespace: "velero"},
		Kubernetes: admin, Target: tgt, Plugins: host, PluginCommands: cmds, Identity: "as-requester",
		AsRequester: func(r controller.Requester) (restore.Target, error) {
			c := rest.CopyConfig(vc.Config)
			c.Impersonate = rest.ImpersonationConfig{UserName: r.User, Groups: r.Groups}
			return restore.NewTarget(c)
		},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- c.Run(runCtx) }()
	t.Cleanup(func() { stop(); require.NoError(t, <-ran) })

	into := func(ns string) map[string]any {
		return map[string]any{"backupName": fixtureBackup, "includedNamespaces": []any{"shop"}, "namespaceMapping": map[string]any{"shop": ns}}
	}
	_, err = alice.Create(ctx, forged("alice-own", into("alice-shop")), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = alice.Create(ctx, forged("alice-other", into("bob-shop")), metav1.CreateOptions{})
	require.NoError(t, err)

	require.Equal(t, "Completed", veleroPhase(t, vc, veleroRestores, "alice-own", "Completed", "PartiallyFailed", "Failed", "FailedValidation"),
		"controller:\n%s", logs.String())
	own, err := dyn.Resource(veleroRestores).Namespace("velero").Get(ctx, "alice-own", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "alice", own.GetAnnotations()[controller.RequestedByAnnotation], "kept through the controller's own updates")
	assert.Equal(t, "shop-admins,system:authenticated", own.GetAnnotations()[controller.RequestedByGroupsAnnotation])
	deployments, err := admin.AppsV1().Deployments("alice-shop").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, deployments.Items, "restored into alice's namespace")

	require.Equal(t, "FailedValidation", veleroPhase(t, vc, veleroRestores, "alice-other", "Completed", "PartiallyFailed", "Failed", "FailedValidation"))
	other, err := dyn.Resource(veleroRestores).Namespace("velero").Get(ctx, "alice-other", metav1.GetOptions{})
	require.NoError(t, err)
	errs, _, _ := unstructured.NestedStringSlice(other.Object, "status", "validationErrors")
	require.Len(t, errs, 1)
	t.Logf("refused: %s", errs[0])
	assert.Contains(t, errs[0], "alice may not restore what the Restore holds: ")
	assert.Contains(t, errs[0], "no create, get on configmaps in namespace bob-shop (ConfigMap bob-shop/settings)")
	assert.Regexp(t, `; and \d+ more$`, errs[0], "the first few named")
	cms, err := admin.CoreV1().ConfigMaps("bob-shop").List(ctx, metav1.ListOptions{LabelSelector: restore.RestoreNameLabel})
	require.NoError(t, err)
	assert.Empty(t, cms.Items, "nothing written where alice may not write")

	// Another who may update Restores cannot change who created one.
	bob := as("bob", "shop-admins").Resource(veleroRestores).Namespace("velero")
	other.SetAnnotations(map[string]string{controller.RequestedByAnnotation: "bob"})
	updated, err := bob.Update(ctx, other, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "alice", updated.GetAnnotations()[controller.RequestedByAnnotation])
}
