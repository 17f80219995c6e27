package controller

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero"
)

// What whoever may create a Restore must not reach through the controller's rights is
// refused, the reason on the Restore, before its backup is read: a namespace mapping
// onto a protected namespace (the cluster's own, and Velero's, which holds its
// locations' credentials), resource modifiers that would rewrite RBAC, a backup in a
// location the controller does not restore from. What the guard allows goes on.
func TestHostileRestoresFailValidation(t *testing.T) {
	rbacRewrite := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "grant", Namespace: "velero"}, Data: map[string]string{"rules.yaml": `
version: v1
resourceModifierRules:
- conditions: {groupResource: rolebindings.rbac.authorization.k8s.io}
  patches: [{operation: replace, path: /roleRef/name, value: "\"cluster-admin\""}]
`}}
	backup := func(name, location string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "velero.io/v1", "kind": "Backup",
			"metadata": map[string]any{"name": name, "namespace": "velero"},
			"spec":     map[string]any{"storageLocation": location}, "status": map[string]any{"phase": "Completed"}}}
	}
	location := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "velero.io/v1", "kind": "BackupStorageLocation",
			"metadata": map[string]any{"name": name, "namespace": "velero"},
			"spec":     map[string]any{"provider": "aws", "objectStorage": map[string]any{"bucket": name}}, "status": map[string]any{"phase": "Available"}}}
	}
	for _, tc := range []struct {
		name  string
		guard Guard
		spec  map[string]any
		want  string
	}{
		{"onto kube-system", Guard{}, map[string]any{"backupName": "b", "namespaceMapping": map[string]any{"shop": "kube-system"}},
			"spec.namespaceMapping: shop maps onto kube-system, a protected namespace the controller restores nothing into"},
		{"onto Velero's namespace", Guard{ProtectedNamespaces: []string{}}, map[string]any{"backupName": "b", "namespaceMapping": map[string]any{"shop": "velero"}},
			"spec.namespaceMapping: shop maps onto velero, a protected namespace"},
		{"RBAC rewritten", Guard{}, map[string]any{"backupName": "b", "resourceModifier": map[string]any{"kind": "configmap", "name": "grant"}},
			`spec.resourceModifier: rule 0 (groupResource "rolebindings.rbac.authorization.k8s.io") would change rolebindings.rbac.authorization.k8s.io, which grant rights`},
		{"another location", Guard{Locations: []string{"default"}}, map[string]any{"backupName": "elsewhere"},
			"spec.backupName: backup elsewhere is in storage location team-b, which the controller does not restore from (it restores from default)"},
		// What the guard allows goes on, to fail for want of the location's plugin.
		{"allowed", Guard{ProtectedNamespaces: []string{}, RBACModifiers: true, Locations: []string{"team-b"}},
			map[string]any{"backupName": "elsewhere", "namespaceMapping": map[string]any{"shop": "kube-system"}, "resourceModifier": map[string]any{"kind": "configmap", "name": "grant"}},
			""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{velero.RestoresResource: "RestoreList"},
				veleroRestore("r", tc.spec, ""), backup("b", "default"), backup("elsewhere", "team-b"), location("default"), location("team-b"))
			c := &Controller{velero: velero.Client{Dynamic: dyn, Namespace: "velero"}, clients: kubefake.NewClientset(rbacRewrite), guard: tc.guard,
				log: slog.New(slog.DiscardHandler), identity: "replica-1", slots: make(chan struct{}, 1), events: record.NewFakeRecorder(10),
				metrics: &countingMetrics{}, restores: cache.NewStore(cache.MetaNamespaceKeyFunc), host: nil}
			ctx := context.Background()
			status, err := c.carryOut(ctx, veleroRestore("r", tc.spec, ""), time.Now(), c.log)
			require.NoError(t, err)
			if tc.want == "" {
				assert.NotEqual(t, "FailedValidation", string(status.Phase), "%v", status.ValidationErrors)
				return
			}
			assert.Equal(t, "FailedValidation", string(status.Phase))
			require.Len(t, status.ValidationErrors, 1)
			assert.Contains(t, status.ValidationErrors[0], tc.want)
		})
	}
}

// A backup that holds a protected namespace's objects is refused once planned, naming
// the first object it would restore there; left out by the Restore's filter, it is not.
func TestAPlanIntoAProtectedNamespaceIsRefused(t *testing.T) {
	var buf bytes.Buffer
	w, err := archive.NewWriter(&buf, archive.Format11)
	require.NoError(t, err)
	for _, ns := range []string{"shop", "kube-system"} {
		require.NoError(t, w.Add(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "settings", "namespace": ns, "uid": "uid-" + ns}}}, "configmaps", true))
	}
	require.NoError(t, w.Close())
	ctx := context.Background()
	b, err := archive.Read(ctx, &buf, archive.Options{})
	require.NoError(t, err)
	s, err := memcluster.StartServer(memcluster.Options{})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	tgt, err := restore.NewTarget(s.Config())
	require.NoError(t, err)

	p, err := restore.NewPlan(ctx, b, tgt, restore.PlanOptions{})
	require.NoError(t, err)
	assert.EqualError(t, Guard{}.checkPlan(p, "velero"), "ConfigMap kube-system/settings would be restored into kube-system, a protected namespace "+
		"the controller restores nothing into (leave it out with spec.excludedNamespaces, or map it elsewhere)")
	assert.NoError(t, Guard{ProtectedNamespaces: []string{}}.checkPlan(p, "velero"))

	p, err = restore.NewPlan(ctx, b, tgt, restore.PlanOptions{Selection: restore.Selection{NamespaceMappings: map[string]string{"kube-system": "kube-system-copy"}}})
	require.NoError(t, err)
	assert.NoError(t, Guard{}.checkPlan(p, "velero"), "mapped elsewhere")
}

// Who created a Restore is taken from what the requester policy recorded, and only when
// the policy and its binding were enforced before the Restore was made: a Restore made
// without them, or too soon after they were made, could name anyone.
func TestTheRequesterIsTrustedOnlyWhereThePolicyRecordedIt(t *testing.T) {
	made := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	policy := &admissionv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: RequesterPolicy, CreationTimestamp: metav1.NewTime(made)}}
	binding := &admissionv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: RequesterPolicy, CreationTimestamp: metav1.NewTime(made)},
		Spec: admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: RequesterPolicy}}
	restoreAt := func(at time.Time, ann map[string]string) *unstructured.Unstructured {
		o := veleroRestore("r", map[string]any{"backupName": "b"}, "")
		o.SetCreationTimestamp(metav1.NewTime(at))
		o.SetAnnotations(ann)
		return o
	}
	recorded := map[string]string{RequestedByAnnotation: "alice", RequestedByGroupsAnnotation: "team-a,system:authenticated"}
	ctx := context.Background()

	c := &Controller{clients: kubefake.NewClientset(policy, binding)}
	req, err := c.requester(ctx, restoreAt(made.Add(time.Minute), recorded))
	require.NoError(t, err)
	assert.Equal(t, Requester{User: "alice", Groups: []string{"team-a", "system:authenticated"}}, req)

	_, err = c.requester(ctx, restoreAt(made.Add(time.Minute), nil))
	assert.ErrorContains(t, err, "metadata.annotations[restoregraph.dev/requested-by]: who created the Restore is not recorded")
	_, err = c.requester(ctx, restoreAt(made.Add(time.Second), recorded))
	assert.ErrorContains(t, err, "the Restore was created before the MutatingAdmissionPolicy restoregraph-requester and its binding")

	_, err = (&Controller{clients: kubefake.NewClientset(policy)}).requester(ctx, restoreAt(made.Add(time.Minute), recorded))
	assert.ErrorContains(t, err, `the MutatingAdmissionPolicyBinding restoregraph-requester, which records who creates a Restore: `+
		`mutatingadmissionpolicybindings.admissionregistration.k8s.io "restoregraph-requester" not found`)
	other := binding.DeepCopy()
	other.Spec.PolicyName = "allow-all"
	_, err = (&Controller{clients: kubefake.NewClientset(policy, other)}).requester(ctx, restoreAt(made.Add(time.Minute), recorded))
	assert.ErrorContains(t, err, `binds policy "allow-all", not restoregraph-requester`)
}

// A RightsError names the user and the first few rights they lack, and how many more.
func TestARightsErrorNamesTheFirstFew(t *testing.T) {
	e := &RightsError{User: "alice", Missing: []string{"no create on configmaps in namespace b (ConfigMap b/x)"}}
	assert.EqualError(t, e, "alice may not restore what the Restore holds: no create on configmaps in namespace b (ConfigMap b/x)")
	for i := 0; i < maxShownRights+2; i++ {
		e.Missing = append(e.Missing, "no get")
	}
	assert.Regexp(t, `^alice may not restore what the Restore holds: no create on configmaps in namespace b \(ConfigMap b/x\)(; no get){7}; and 3 more$`, e.Error())
}

// A Restore whose backup cannot be read because the API server is away, or answers
// with a server error, is not ended (no FailedValidation): the error says to carry it out
// again. A backup that is not there fails validation.
func TestARestoreIsNotEndedForAServerAway(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		ended string
	}{
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, ""},
		{"unavailable", apierrors.NewServiceUnavailable("etcd is away"), ""},
		{"absent", apierrors.NewNotFound(schema.GroupResource{Group: "velero.io", Resource: "backups"}, "b"), "FailedValidation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{velero.RestoresResource: "RestoreList"})
			dyn.PrependReactor("get", "backups", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tc.err })
			c := &Controller{velero: velero.Client{Dynamic: dyn, Namespace: "velero"}, clients: kubefake.NewClientset(), log: slog.New(slog.DiscardHandler)}
			status, err := c.carryOut(context.Background(), veleroRestore("r", map[string]any{"backupName": "b"}, ""), time.Now(), c.log)
			if tc.ended == "" {
				require.Error(t, err)
				assert.Empty(t, status.Phase)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.ended, string(status.Phase))
		})
	}
}

// An ended Restore's Lease is deleted once nobody holds it; one held, or of a Restore
// still running, is left.
func TestAnEndedRestoresLeaseIsDropped(t *testing.T) {
	lease := func(name, holder string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "restoregraph-restore-" + name, Namespace: "velero"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{velero.RestoresResource: "RestoreList"},
		veleroRestore("ended", map[string]any{}, "Completed"), veleroRestore("held", map[string]any{}, "Completed"),
		veleroRestore("running", map[string]any{}, "InProgress"))
	kube := kubefake.NewClientset(lease("ended", ""), lease("held", "replica-b"), lease("running", ""))
	c := &Controller{velero: velero.Client{Dynamic: dyn, Namespace: "velero"}, clients: kube, log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	for _, name := range []string{"ended", "held", "running", "gone"} {
		c.dropLease(ctx, name)
	}
	left, err := kube.CoordinationV1().Leases("velero").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, l := range left.Items {
		names = append(names, l.Name)
	}
	assert.ElementsMatch(t, []string{"restoregraph-restore-held", "restoregraph-restore-running"}, names)
}

// The sweep deletes the Leases of ended Restores nobody holds, released or expired (a
// process killed before it dropped one); a held one, one of a running Restore, and a
// Lease of something else stay.
func TestLeftLeasesOfEndedRestoresAreSwept(t *testing.T) {
	now := metav1.NewMicroTime(time.Now())
	long := metav1.NewMicroTime(time.Now().Add(-time.Hour))
	lease := func(name, holder string, renewed metav1.MicroTime) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "velero"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &renewed, LeaseDurationSeconds: ptr.To[int32](15)}}
	}
	kube := kubefake.NewClientset(lease("restoregraph-restore-released", "", long), lease("restoregraph-restore-expired", "replica-b", long),
		lease("restoregraph-restore-held", "replica-b", now), lease("restoregraph-restore-running", "", long), lease("other", "", long))
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for name, phase := range map[string]string{"released": "Completed", "expired": "PartiallyFailed", "held": "Completed", "running": "InProgress"} {
		require.NoError(t, store.Add(veleroRestore(name, map[string]any{}, phase)))
	}
	c := &Controller{velero: velero.Client{Namespace: "velero"}, clients: kube, restores: store, log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	c.sweepLeases(ctx)
	left, err := kube.CoordinationV1().Leases("velero").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, l := range left.Items {
		names = append(names, l.Name)
	}
	assert.ElementsMatch(t, []string{"restoregraph-restore-held", "restoregraph-restore-running", "other"}, names)
}
