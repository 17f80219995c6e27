package restore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func verdicts(rep *VerifyReport) map[string]VerifiedObject {
	out := map[string]VerifiedObject{}
	for _, o := range rep.Objects {
		out[o.Resource+"/"+o.Name] = o
	}
	return out
}

// Verify passes on what a restore made of the real backup, and names what was broken
// afterwards: an object deleted, an owner changed, data changed.
func TestVerifyNamesWhatIsBroken(t *testing.T) {
	b := shop(t)
	tgt := shopTarget(t)
	ctx := context.Background()
	opts := testOptions{Retry: fastRetry, NamespaceMappings: map[string]string{"shop": "shop-copy"}}
	rep, err := restoreAll(ctx, tgt, b, opts)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", firstFailure(rep))

	v, err := verifyAll(ctx, tgt, b, opts)
	require.NoError(t, err)
	require.True(t, v.OK(), "%v", v.Summary)
	assert.Equal(t, rep.Count(Restored), v.Summary[Verified], "every object restored is verified; none left to the target is asked for")

	configmaps := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("shop-copy")
	require.NoError(t, configmaps.Delete(ctx, "settings", metav1.DeleteOptions{}))
	secrets := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace("shop-copy")
	creds, err := secrets.Get(ctx, "creds", metav1.GetOptions{})
	require.NoError(t, err)
	unstructured.SetNestedField(creds.Object, "c3dvcmRmaXNo", "data", "password")
	_, err = secrets.Update(ctx, creds, metav1.UpdateOptions{})
	require.NoError(t, err)
	pods := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("shop-copy")
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	pod := list.Items[0]
	refs := pod.GetOwnerReferences()
	refs[0].UID = "00000000-0000-0000-0000-000000000000"
	pod.SetOwnerReferences(refs)
	_, err = pods.Update(ctx, &pod, metav1.UpdateOptions{})
	require.NoError(t, err)

	// Another, held by a finalizer once deleted, as a ReplicaSet's surplus Pod is
	// while it terminates: replaced, its ReplicaSet is there.
	require.GreaterOrEqual(t, len(list.Items), 2)
	leaving := list.Items[1]
	leaving.SetFinalizers([]string{"example.com/hold"})
	_, err = pods.Update(ctx, &leaving, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, pods.Delete(ctx, leaving.GetName(), metav1.DeleteOptions{}))

	v, err = verifyAll(ctx, tgt, b, opts)
	require.NoError(t, err)
	assert.False(t, v.OK())
	got := verdicts(v)
	assert.Equal(t, Replaced, got["pods/"+leaving.GetName()].Verdict, "%v", got["pods/"+leaving.GetName()].Problems)
	assert.Contains(t, got["pods/"+leaving.GetName()].Problems[0], "being deleted; its controller ReplicaSet")
	assert.Equal(t, Missing, got["configmaps/settings"].Verdict)
	assert.Equal(t, Differs, got["secrets/creds"].Verdict)
	assert.Equal(t, []string{"data.password: not what the backup holds (a Secret's values are not shown)"}, got["secrets/creds"].Problems,
		"the field is named, neither value is shown")
	assert.Equal(t, Differs, got["pods/"+pod.GetName()].Verdict)
	require.Len(t, got["pods/"+pod.GetName()].Problems, 1)
	assert.Contains(t, got["pods/"+pod.GetName()].Problems[0], "owner ReplicaSet web-6648b76bbd (uid 00000000-0000-0000-0000-000000000000): the ReplicaSet of that name has uid")
	assert.Equal(t, 3, v.Summary[Missing]+v.Summary[Differs])
}

// Verify reports ownership lost: an object whose owner is restored, but that no longer
// names it, as after a restore that removes ownerReferences. It counted as adopted, and
// verified, before.
func TestVerifyReportsLostOwnership(t *testing.T) {
	b := shop(t)
	tgt := shopTarget(t)
	ctx := context.Background()
	opts := testOptions{Retry: fastRetry, NamespaceMappings: map[string]string{"shop": "shop-owned"}}
	rep, err := restoreAll(ctx, tgt, b, opts)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", firstFailure(rep))

	replicasets := tgt.Dynamic.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}).Namespace("shop-owned")
	list, err := replicasets.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, list.Items)
	rs := list.Items[0]
	require.NotEmpty(t, rs.GetOwnerReferences(), "restored with its owner")
	rs.SetOwnerReferences(nil)
	// As a restore that removes ownerReferences leaves it: not made by this restore.
	annotations := rs.GetAnnotations()
	delete(annotations, SourceUIDAnnotation)
	rs.SetAnnotations(annotations)
	_, err = replicasets.Update(ctx, &rs, metav1.UpdateOptions{})
	require.NoError(t, err)

	v, err := verifyAll(ctx, tgt, b, opts)
	require.NoError(t, err)
	assert.False(t, v.OK(), "lost ownership is not verified")
	got := verdicts(v)["replicasets/"+rs.GetName()]
	assert.Equal(t, Differs, got.Verdict)
	assert.True(t, got.Adopted)
	require.Len(t, got.Problems, 1)
	assert.Contains(t, got.Problems[0], "ownership lost: its owner Deployment shop-owned/web is in the target")
	assert.Equal(t, 1, v.Summary[Differs]+v.Summary[Missing], "nothing else")
}
