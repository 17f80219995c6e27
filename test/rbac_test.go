package test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
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

// TestRestorerClusterRoleHoldsOnlyWhatItUses reads back, from a cluster the chart's
// RBAC was applied to, the ClusterRole the controller's restores write with, and shows
// that it holds no verb the restore does not use. As the chart's ServiceAccount, it
// restores the backup the real Velero server wrote (testdata/velero) with the status of
// every object, then a backup holding a Role that grants what the ServiceAccount does
// not hold, a binding to cluster-admin, and a Deployment a ConfigMap waits for by the
// user's order (the test makes it Available only once the restore has found it not
// ready, so that the restore's wait is always exercised). Every request the restore
// sent is read as the API server's authorizer reads it (its RequestInfoFactory): each
// verb of the resource rule must be among them (discovery is every authenticated
// user's, by the cluster's system:discovery, and none is refused). bind and
// escalate are asked of the authorizer, not sent: each is taken away in turn, and the
// Role or the binding is then refused, named.
func TestRestorerClusterRoleHoldsOnlyWhatItUses(t *testing.T) {
	t.Parallel() // its own control plane: beside the other tests that have theirs
	ctx := context.Background()
	velero, err := archive.ReadFile(ctx, filepath.Join("..", "testdata", "velero", fixtureBackup, fixtureBackup+".tar.gz"), archive.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { velero.Close() })
	grants, err := archive.ReadFile(ctx, writeBackup(t, []map[string]any{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "grants", "uid": "ns-grants"}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": map[string]any{"name": "cleaner", "namespace": "grants", "uid": "role-cleaner"},
			"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"delete"}}}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": map[string]any{"name": "admins", "namespace": "grants", "uid": "rb-admins"},
			"subjects": []any{map[string]any{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "someone"}},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"}},
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "gate", "namespace": "grants", "uid": "dep-gate"},
			"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": map[string]any{"app": "gate"}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "gate"}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "gate", "image": "registry.example/gate:1"}}}}}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "after-gate", "namespace": "grants", "uid": "cm-after-gate"}},
	}, "", nil), archive.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { grants.Close() })
	order := &restore.Order{Dependencies: []restore.KindDependency{{
		Satisfying: restore.GroupKind{Group: "apps", Kind: "Deployment"}, Requiring: restore.GroupKind{Kind: "ConfigMap"}}}}

	c := startCluster(t, harness.Options{})
	applyYAML(t, c, "apiVersion: v1\nkind: Namespace\nmetadata: {name: velero}")
	asSA := asChart(t, c)
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	role, err := cs.RbacV1().ClusterRoles().Get(ctx, "restoregraph-restorer", metav1.GetOptions{})
	require.NoError(t, err)
	t.Logf("restorer ClusterRole, read back: %v", role.Rules)

	rec := &requests{}
	recorded := rest.CopyConfig(asSA)
	recorded.WrapTransport = rec.wrap
	restoreAs := func(b *archive.Backup, sel restore.Selection) *restore.Report {
		tgt, err := restore.NewTarget(recorded)
		require.NoError(t, err)
		rep, err := restore.Run(ctx, b, tgt, restore.PlanOptions{Selection: sel}, restore.RunOptions{ItemTimeout: 30 * time.Second})
		require.NoError(t, err)
		return rep
	}
	rep := restoreAs(velero, restore.Selection{RestoreStatus: &restore.StatusSelection{IncludedResources: []string{"*"}}})
	require.True(t, rep.OK(), "%v %s", rep.Summary, firstFailed(rep))

	// The gate becomes Available once the restore has read it and found it not.
	const gatePath = "/apis/apps/v1/namespaces/grants/deployments/gate"
	gated := make(chan error, 1)
	go func() {
		for deadline := time.Now().Add(time.Minute); !slices.ContainsFunc(rec.sentLines(), func(l string) bool { return strings.HasPrefix(l, "GET "+gatePath+"?") }); {
			if time.Now().After(deadline) {
				gated <- fmt.Errorf("the restore never read %s", gatePath)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		d, err := cs.AppsV1().Deployments("grants").Get(ctx, "gate", metav1.GetOptions{})
		if err == nil {
			d.Status.ObservedGeneration, d.Status.Replicas, d.Status.UpdatedReplicas = d.Generation, 1, 1
			d.Status.ReadyReplicas, d.Status.AvailableReplicas = 1, 1
			d.Status.Conditions = []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}}
			_, err = cs.AppsV1().Deployments("grants").UpdateStatus(ctx, d, metav1.UpdateOptions{})
		}
		gated <- err
	}()
	rep = restoreAs(grants, restore.Selection{Order: order})
	require.True(t, rep.OK(), "%v %s", rep.Summary, firstFailed(rep))
	require.NoError(t, <-gated)

	sent, refused := rec.all()
	require.Empty(t, refused, "with every verb, nothing is refused")
	factory := &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	used := map[string][]string{} // verb: what it was sent for
	var nonResource []string
	for _, line := range sent {
		method, target, _ := strings.Cut(line, " ")
		req, err := http.NewRequest(method, "https://apiserver"+target, nil)
		require.NoError(t, err)
		info, err := factory.NewRequestInfo(req)
		require.NoError(t, err)
		if info.IsResourceRequest {
			used[info.Verb] = append(used[info.Verb], info.APIGroup+"/"+info.Resource)
		} else {
			nonResource = append(nonResource, info.Path)
		}
	}
	// Discovery is asked of every authenticated user's system:discovery, not of the
	// ClusterRole: nothing was refused.
	t.Logf("paths not of resources: %v", sets.List(sets.New(nonResource...)))
	asked := []string{"bind", "escalate"}
	for _, r := range role.Rules {
		for _, u := range r.NonResourceURLs { // RBAC's match: whole, or a prefix before "*"
			prefix, wild := strings.CutSuffix(u, "*")
			assert.True(t, slices.ContainsFunc(nonResource, func(p string) bool {
				return p == u || wild && strings.HasPrefix(p, prefix)
			}), "the restore sent no request for %s: the ClusterRole need not grant it", u)
		}
		if len(r.NonResourceURLs) > 0 {
			continue
		}
		for _, verb := range r.Verbs {
			if slices.Contains(asked, verb) {
				continue
			}
			assert.NotEmpty(t, used[verb], "the restore sent no request for %s: the ClusterRole need not grant it", verb)
			t.Logf("%s: %d request(s), for %v", verb, len(used[verb]), sets.List(sets.New(used[verb]...)))
		}
	}

	// bind and escalate, each taken away: the grants backup, into a namespace of its own,
	// has its binding or Role refused.
	ssar := kubernetes.NewForConfigOrDie(asSA).AuthorizationV1().SelfSubjectAccessReviews()
	for _, verb := range asked {
		i := slices.IndexFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Verbs, verb) })
		require.GreaterOrEqual(t, i, 0, "the ClusterRole grants %s", verb)
		cut := role.DeepCopy()
		cut.Rules[i].Verbs = slices.DeleteFunc(slices.Clone(cut.Rules[i].Verbs), func(v string) bool { return v == verb })
		cut.ResourceVersion = ""
		current, err := cs.RbacV1().ClusterRoles().Get(ctx, role.Name, metav1.GetOptions{})
		require.NoError(t, err)
		cut.ResourceVersion = current.ResourceVersion
		_, err = cs.RbacV1().ClusterRoles().Update(ctx, cut, metav1.UpdateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool { // the authorizer's informer has it
			r, err := ssar.Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: rbacv1.GroupName, Resource: "roles", Namespace: "grants-" + verb}}},
				metav1.CreateOptions{})
			return err == nil && !r.Status.Allowed
		}, 10*time.Second, 50*time.Millisecond)

		rep := restoreAs(grants, restore.Selection{NamespaceMappings: map[string]string{"grants": "grants-" + verb},
			Filter: filter.Spec{ExcludeResources: []string{"deployments", "configmaps"}}})
		var failed []string
		for o := range rep.Unusual() {
			if o.Status == restore.Failed {
				failed = append(failed, o.Kind+"/"+o.Name+": "+o.Reason)
			}
		}
		want := map[string]string{"escalate": "Role/cleaner", "bind": "RoleBinding/admins"}[verb]
		require.Len(t, failed, 1, "without %s", verb)
		assert.True(t, strings.HasPrefix(failed[0], want+": "), "without %s, %s is refused: %s", verb, want, failed[0])
		assert.Contains(t, failed[0], "forbidden", "without %s", verb)
		t.Logf("without %s: %s", verb, failed[0])

		current, err = cs.RbacV1().ClusterRoles().Get(ctx, role.Name, metav1.GetOptions{})
		require.NoError(t, err)
		current.Rules = role.Rules
		_, err = cs.RbacV1().ClusterRoles().Update(ctx, current, metav1.UpdateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			r, err := ssar.Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: rbacv1.GroupName, Resource: "roles", Namespace: "grants"}}},
				metav1.CreateOptions{})
			return err == nil && r.Status.Allowed
		}, 10*time.Second, 50*time.Millisecond)
	}
}

// requests records, through a transport, the requests sent ("METHOD path?query") and
// those the API server refused (403).
type requests struct {
	mu            sync.Mutex
	sent, refused []string
}

func (r *requests) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		line := req.Method + " " + req.URL.Path + "?" + req.URL.RawQuery
		r.mu.Lock()
		defer r.mu.Unlock()
		r.sent = append(r.sent, line)
		if err == nil && resp.StatusCode == http.StatusForbidden {
			r.refused = append(r.refused, line)
		}
		return resp, err
	})
}

func (r *requests) sentLines() []string {
	sent, _ := r.all()
	return sent
}

func (r *requests) all() (sent, refused []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sent), slices.Clone(r.refused)
}
