package restore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
)

func persistentVolume(name, policy, claim string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "PersistentVolume",
		"metadata": map[string]any{"name": name, "uid": "uid-" + name},
		"spec": map[string]any{"capacity": map[string]any{"storage": "1Gi"}, "accessModes": []any{"ReadWriteOnce"},
			"persistentVolumeReclaimPolicy": policy, "storageClassName": "fast",
			"csi":      map[string]any{"driver": "disk.example.io", "volumeHandle": "vol-" + name},
			"claimRef": map[string]any{"kind": "PersistentVolumeClaim", "namespace": "shop", "name": claim, "uid": "uid-" + claim}},
		"status": map[string]any{"phase": "Bound"}}
}

func claimOf(name, class, volume string) map[string]any {
	spec := map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}},
		"storageClassName": class}
	if volume != "" {
		spec["volumeName"] = volume
	}
	return map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
		"metadata": map[string]any{"name": name, "namespace": "shop", "uid": "uid-" + name,
			"annotations": map[string]any{"pv.kubernetes.io/bind-completed": "yes"}},
		"spec": spec, "status": map[string]any{"phase": "Bound"}}
}

func mounting(name, claim string) map[string]any {
	return pod(name, nil, []any{map[string]any{"name": "data", "persistentVolumeClaim": map[string]any{"claimName": claim}}})
}

// disks is a VolumeSnapshotter of a location: a volume of a snapshot is "vol-from-" the
// snapshot's ID, written into the PersistentVolume's CSI volumeHandle.
type disks struct {
	mu   sync.Mutex
	made []string
}

func (d *disks) CreateVolumeFromSnapshot(_ context.Context, s NativeSnapshot) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id := "vol-from-" + s.ID
	d.made = append(d.made, id)
	return id, nil
}

func (d *disks) SetVolumeID(_ context.Context, pv *unstructured.Unstructured, id string) (*unstructured.Unstructured, error) {
	return pv, unstructured.SetNestedField(pv.Object, id, "spec", "csi", "volumeHandle")
}

// csiClaims stands for Velero's CSI claim action, which a restore of CSI snapshots
// needs: it marks the claims it is given.
type csiClaims struct{}

func (csiClaims) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"persistentvolumeclaims"}}, nil
}

func (csiClaims) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	in.Item.SetAnnotations(map[string]string{"csi": "pointed at its snapshot"})
	return &ria.ExecuteOutput{UpdatedItem: in.Item}, nil
}

func csiRegistry(t *testing.T) *plugin.Registry {
	var reg plugin.Registry
	require.NoError(t, reg.Register(VolumeActions[VolumeCSISnapshot][0], plugin.V1, csiClaims{}))
	return &reg
}

// Each PersistentVolume comes back as Velero brings it back, by its records and its
// reclaim policy: one with a CSI snapshot and one deleted with its claim are left out
// and their claims provisioned again (no volumeName), one kept with its claim is
// restored as it was, and one with a native snapshot is restored pointing at a volume
// its location's VolumeSnapshotter made of the snapshot. The plan says so of each
// volume and claim.
func TestVolumesComeBackAsTheirRecordsSay(t *testing.T) {
	b := backupOf(t,
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "uid-ns"}},
		persistentVolume("pv-csi", "Delete", "data-csi"), claimOf("data-csi", "fast", "pv-csi"),
		persistentVolume("pv-gone", "Delete", "data-gone"), claimOf("data-gone", "fast", "pv-gone"),
		persistentVolume("pv-kept", "Retain", "data-kept"), claimOf("data-kept", "fast", "pv-kept"),
		persistentVolume("pv-disk", "Retain", "data-disk"), claimOf("data-disk", "fast", "pv-disk"))
	vols := []Volume{
		{PV: "pv-csi", ClaimNamespace: "shop", Claim: "data-csi", Method: VolumeCSISnapshot},
		{PV: "pv-disk", ClaimNamespace: "shop", Claim: "data-disk", Method: VolumeNativeSnapshot,
			Snapshot: &NativeSnapshot{Location: "default", Provider: "example.io/disks", ID: "snap-1", VolumeType: "gp3", AZ: "a"}},
	}
	d := &disks{}
	_, tgt := cluster(t, memcluster.Options{BindVolumes: true})
	ctx := context.Background()
	p, err := NewPlan(ctx, b, tgt, PlanOptions{Volumes: vols, Extensions: Extensions{Plugins: csiRegistry(t),
		VolumeSnapshotters: map[string]VolumeSnapshotter{"default": d}}})
	require.NoError(t, err)
	planned := map[string]PlannedObject{}
	for o := range p.Objects() {
		planned[o.Name] = o
	}
	for name, want := range map[string]struct {
		volume   VolumeMethod
		excluded bool
	}{
		"pv-csi": {VolumeCSISnapshot, true}, "data-csi": {VolumeCSISnapshot, false},
		"pv-gone": {VolumeProvisioned, true}, "data-gone": {VolumeProvisioned, false},
		"pv-kept": {VolumeAsIs, false}, "data-kept": {VolumeAsIs, false},
		"pv-disk": {VolumeNativeSnapshot, false}, "data-disk": {VolumeNativeSnapshot, false},
	} {
		assert.Equal(t, want.volume, planned[name].Volume, name)
		assert.Equal(t, want.excluded, planned[name].ExcludedBy == Volumes, "%s: %s", name, planned[name].Excluded)
	}
	assert.Equal(t, vols, p.Volumes, "the plan keeps the records it was made of")

	rep, err := Apply(ctx, p, tgt, RunOptions{Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK(), "summary %v, first failure: %v", rep.Summary, firstFailure(rep))
	assert.Equal(t, []string{"vol-from-snap-1"}, d.made, "one volume made, of the native snapshot")
	get := func(res, ns, name string) *unstructured.Unstructured {
		o, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: res}).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, "%s %s", res, name)
		return o
	}
	handle := func(pv *unstructured.Unstructured) string {
		h, _, _ := unstructured.NestedString(pv.Object, "spec", "csi", "volumeHandle")
		return h
	}
	assert.Equal(t, "vol-from-snap-1", handle(get("persistentvolumes", "", "pv-disk")))
	assert.Equal(t, "vol-pv-kept", handle(get("persistentvolumes", "", "pv-kept")), "restored as it was")
	for _, gone := range []string{"pv-csi", "pv-gone"} {
		_, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}).Get(ctx, gone, metav1.GetOptions{})
		assert.Error(t, err, "%s is left out", gone)
	}
	for claim, volume := range map[string]string{"data-csi": "", "data-gone": "", "data-kept": "pv-kept", "data-disk": "pv-disk"} {
		vn, _, _ := unstructured.NestedString(get("persistentvolumeclaims", "shop", claim).Object, "spec", "volumeName")
		assert.Equal(t, volume, vn, "%s binds to its restored volume, or is provisioned again", claim)
	}
	assert.Equal(t, "pointed at its snapshot", get("persistentvolumeclaims", "shop", "data-csi").GetAnnotations()["csi"], "the CSI claim action ran")
}

// A volume whose data cannot come back as its records say is named before anything is
// restored: a native snapshot whose location has no VolumeSnapshotter, a CSI snapshot
// without Velero's CSI claim action. With RestorePVs false no data is restored, and
// neither is needed: the native snapshot's volume is restored as it was.
func TestVolumesThatCannotComeBackAreNamed(t *testing.T) {
	b := backupOf(t,
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "uid-ns"}},
		persistentVolume("pv-csi", "Delete", "data-csi"), claimOf("data-csi", "fast", "pv-csi"),
		persistentVolume("pv-disk", "Retain", "data-disk"), claimOf("data-disk", "fast", "pv-disk"))
	vols := []Volume{
		{PV: "pv-csi", ClaimNamespace: "shop", Claim: "data-csi", Method: VolumeCSISnapshot},
		{PV: "pv-disk", ClaimNamespace: "shop", Claim: "data-disk", Method: VolumeNativeSnapshot,
			Snapshot: &NativeSnapshot{Location: "east", Provider: "example.io/disks", ID: "snap-1"}},
	}
	_, tgt := cluster(t, memcluster.Options{BindVolumes: true})
	ctx := context.Background()
	_, err := NewPlan(ctx, b, tgt, PlanOptions{Volumes: vols})
	var ve *VolumeError
	require.ErrorAs(t, err, &ve)
	assert.Contains(t, err.Error(), `persistentvolume pv-disk (native snapshot): no VolumeSnapshotter for its VolumeSnapshotLocation "east" (provider "example.io/disks")`)
	gone := errors.New("no such volume snapshot location: velero/east")
	_, err = NewPlan(ctx, b, tgt, PlanOptions{Volumes: vols, Extensions: Extensions{VolumeSnapshotters: map[string]VolumeSnapshotter{"east": UnavailableSnapshotter{gone}}}})
	require.ErrorAs(t, err, &ve)
	assert.ErrorIs(t, err, gone, "why the location's VolumeSnapshotter could not be had")
	assert.Contains(t, err.Error(), `persistentvolume pv-disk (native snapshot): VolumeSnapshotLocation "east": no such volume snapshot location: velero/east`)
	_, err = NewPlan(ctx, b, tgt, PlanOptions{Volumes: vols, Extensions: Extensions{VolumeSnapshotters: map[string]VolumeSnapshotter{"east": &disks{}}}})
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "pv-csi", ve.PV)
	assert.Contains(t, err.Error(), "velero.io/csi-pvc-restorer")

	// Nothing is restored of what a filter leaves out, and nothing is needed for it.
	_, err = NewPlan(ctx, b, tgt, PlanOptions{Volumes: vols, Selection: Selection{Filter: filter.Spec{ExcludeResources: []string{"persistentvolumes", "persistentvolumeclaims"}}}})
	require.NoError(t, err)

	no := false
	p, err := NewPlan(ctx, b, tgt, PlanOptions{Volumes: vols, Selection: Selection{RestorePVs: &no}})
	require.NoError(t, err, "no data restored, no VolumeSnapshotter or action needed")
	rep, err := Apply(ctx, p, tgt, RunOptions{Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK(), "summary %v, first failure: %v", rep.Summary, firstFailure(rep))
	pv, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}).Get(ctx, "pv-disk", metav1.GetOptions{})
	require.NoError(t, err)
	h, _, _ := unstructured.NestedString(pv.Object, "spec", "csi", "volumeHandle")
	assert.Equal(t, "vol-pv-disk", h, "restored as it was, as Velero does without restorePVs")
}

// A Pod that mounts a claim its class binds at once is created once the claim is
// Bound; one whose class binds when its first Pod is scheduled, or that the target has
// no class for, is not held back (it would wait for its own Pod, or for nothing that
// comes). The plan says which and why. A claim that is not Bound within the item
// timeout fails, and its Pod is skipped, named.
func TestPodsWaitForTheClaimsThatBindAtOnce(t *testing.T) {
	b := backupOf(t,
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "uid-ns"}},
		claimOf("data-fast", "fast", ""), mounting("web-fast", "data-fast"),
		claimOf("data-late", "late", ""), mounting("web-late", "data-late"),
		claimOf("data-none", "none", ""), mounting("web-none", "data-none"),
		claimOf("data-stuck", "fast", ""), mounting("web-stuck", "data-stuck"))
	_, tgt := cluster(t, memcluster.Options{})
	ctx := context.Background()
	classes := tgt.Dynamic.Resource(schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"})
	for name, mode := range map[string]string{"fast": "Immediate", "late": "WaitForFirstConsumer"} {
		_, err := classes.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
			"metadata": map[string]any{"name": name}, "provisioner": "disk.example.io", "volumeBindingMode": mode}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	p, err := NewPlan(ctx, b, tgt, PlanOptions{})
	require.NoError(t, err)
	gates := map[string]string{}
	for o := range p.Objects() {
		if o.Gate != "" {
			gates[o.Name] = o.Gate
		}
	}
	assert.Equal(t, map[string]string{
		"data-fast":  "waits until Bound: storage class fast binds it immediate",
		"data-stuck": "waits until Bound: storage class fast binds it immediate",
		"data-late":  "not waited for: storage class late binds it when its first Pod is scheduled, and the Pod would wait for it",
		"data-none":  "not waited for: the target has no storage class none",
	}, gates)

	// The target's binder: data-fast is Bound half a second after it is made.
	claims := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}).Namespace("shop")
	w, err := claims.Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()
	var bound time.Time
	binder := make(chan struct{})
	go func() {
		defer close(binder)
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type != watch.Added || u.GetName() != "data-fast" {
				continue
			}
			time.Sleep(500 * time.Millisecond)
			_ = unstructured.SetNestedField(u.Object, "Bound", "status", "phase")
			bound = time.Now()
			if _, err := claims.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
				panic(fmt.Sprintf("binding data-fast: %v", err))
			}
			return
		}
	}()
	rep, err := Apply(ctx, p, tgt, RunOptions{Retry: fastRetry, ItemTimeout: 2 * time.Second})
	<-binder
	require.NoError(t, err)
	assert.False(t, rep.OK())
	results := byName(rep)
	assert.Equal(t, Restored, results["pods/web-fast"].Status)
	assert.True(t, results["pods/web-fast"].Created.After(bound), "web-fast made after its claim was Bound")
	for _, free := range []string{"web-late", "web-none"} {
		assert.Equal(t, Restored, results["pods/"+free].Status, free)
	}
	assert.Equal(t, Failed, results["persistentvolumeclaims/data-stuck"].Status)
	assert.Contains(t, results["persistentvolumeclaims/data-stuck"].Reason, "not Bound (phase is Pending)")
	assert.Equal(t, Failed, results["pods/web-stuck"].Status)
	assert.Contains(t, results["pods/web-stuck"].Reason, "PersistentVolumeClaim shop/data-stuck Failed", "the claim it waited for is named")
}

// verify holds a claim Bound in the backup to being Bound once restored.
func TestVerifyNamesAClaimThatIsNotBound(t *testing.T) {
	b := backupOf(t,
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "uid-ns"}},
		persistentVolume("pv-kept", "Retain", "data-kept"), claimOf("data-kept", "fast", "pv-kept"),
		pending(claimOf("data-new", "none", "")))
	ctx := context.Background()
	for _, binds := range []bool{true, false} {
		_, tgt := cluster(t, memcluster.Options{BindVolumes: binds})
		p, err := NewPlan(ctx, b, tgt, PlanOptions{})
		require.NoError(t, err)
		if binds {
			rep, err := Apply(ctx, p, tgt, RunOptions{Retry: fastRetry})
			require.NoError(t, err)
			require.True(t, rep.OK(), "summary %v, first failure: %v", rep.Summary, firstFailure(rep))
		} else {
			// A target that binds nothing: the claim waits for its volume, and fails.
			rep, err := Apply(ctx, p, tgt, RunOptions{Retry: fastRetry, ItemTimeout: 500 * time.Millisecond})
			require.NoError(t, err)
			assert.Equal(t, Failed, byName(rep)["persistentvolumeclaims/data-kept"].Status)
		}
		v, err := Verify(ctx, p, tgt, RunOptions{Retry: fastRetry})
		require.NoError(t, err)
		verdicts := map[string]VerifiedObject{}
		for _, o := range v.Objects {
			verdicts[o.Name] = o
		}
		if binds {
			assert.Equal(t, Verified, verdicts["data-kept"].Verdict, "%v", verdicts["data-kept"].Problems)
		} else {
			assert.Equal(t, Differs, verdicts["data-kept"].Verdict)
			assert.Equal(t, []string{"status.phase: Pending, where the backup's claim was Bound"}, verdicts["data-kept"].Problems)
		}
		assert.NotEqual(t, Differs, verdicts["data-new"].Verdict, "a claim that was Pending may stay so: %v", verdicts["data-new"].Problems)
	}
}

// pending is claim as it was before anything bound it.
func pending(claim map[string]any) map[string]any {
	claim["status"] = map[string]any{"phase": "Pending"}
	return claim
}

// snapshotsCRD is a CRD of the snapshot.storage.k8s.io group, as the CSI snapshotter
// ships them.
func snapshotsCRD(plural, kind, scope string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + ".snapshot.storage.k8s.io"},
		"spec": map[string]any{"group": "snapshot.storage.k8s.io", "scope": scope, "versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
			"names": map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind, "listKind": kind + "List"}}}}
}

// serveSnapshots has the target serve VolumeSnapshots and VolumeSnapshotContents, by
// their CRDs, and returns once its discovery lists them.
func serveSnapshots(t *testing.T, tgt Target) {
	t.Helper()
	for _, crd := range []*unstructured.Unstructured{snapshotsCRD("volumesnapshots", "VolumeSnapshot", "Namespaced"),
		snapshotsCRD("volumesnapshotcontents", "VolumeSnapshotContent", "Cluster")} {
		_, err := tgt.Dynamic.Resource(crdGVR).Create(context.Background(), crd, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		_, lists, err := tgt.Discovery.ServerGroupsAndResources()
		return err == nil && slices.ContainsFunc(lists, func(l *metav1.APIResourceList) bool {
			return l.GroupVersion == "snapshot.storage.k8s.io/v1" && len(l.APIResources) == 2
		})
	}, 5*time.Second, 10*time.Millisecond)
}

// csiSnapshots stands for Velero's CSI VolumeSnapshot action: it names the
// VolumeSnapshot anew after the restore's UID, and marks it as one of the items the
// restore must include.
type csiSnapshots struct{}

func (csiSnapshots) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"volumesnapshots.snapshot.storage.k8s.io"}}, nil
}

func (csiSnapshots) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	in.Item.SetName(string(in.Restore.UID) + "-" + in.Item.GetName())
	in.Item.SetAnnotations(map[string]string{MustIncludeAnnotation: "true", "kept": "yes"})
	return &ria.ExecuteOutput{UpdatedItem: in.Item}, nil
}

// A claim whose data comes back from a CSI snapshot brings its VolumeSnapshot and the
// snapshot's content with it, though the filter takes claims alone (Velero's actions
// must include them); a snapshot no claim names stays out. An action that names the
// snapshot anew has it made, and reported, under the new name, without the note
// Velero's actions leave for the restore. A claim whose snapshot the backup lacks is a
// *VolumeError that names the claim.
func TestClaimsBringTheirCSISnapshots(t *testing.T) {
	claim := func(name, snapshot string) map[string]any {
		c := claimOf(name, "fast", "pv-"+name)
		c["metadata"].(map[string]any)["annotations"].(map[string]any)[VolumeSnapshotAnnotation] = snapshot
		return c
	}
	snapshot := func(name, content string) map[string]any {
		return map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
			"metadata": map[string]any{"name": name, "namespace": "shop", "uid": "uid-" + name},
			"spec":     map[string]any{"source": map[string]any{"persistentVolumeClaimName": "data"}},
			"status":   map[string]any{"boundVolumeSnapshotContentName": content, "readyToUse": true}}
	}
	content := func(name string) map[string]any {
		return map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
			"metadata": map[string]any{"name": name, "uid": "uid-" + name},
			"spec":     map[string]any{"driver": "disk.example.io", "deletionPolicy": "Retain", "source": map[string]any{"snapshotHandle": "h-" + name}}}
	}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "uid-ns"}}
	vols := []Volume{{PV: "pv-data", ClaimNamespace: "shop", Claim: "data", Method: VolumeCSISnapshot},
		{PV: "pv-logs", ClaimNamespace: "shop", Claim: "logs", Method: VolumeCSISnapshot}}
	_, tgt := cluster(t, memcluster.Options{BindVolumes: true})
	ctx := context.Background()
	serveSnapshots(t, tgt)
	reg := csiRegistry(t)
	require.NoError(t, reg.Register("example.io/csi-vs", plugin.V1, csiSnapshots{}))
	claimsOnly := Selection{Filter: filter.Spec{IncludeResources: []string{"namespaces", "persistentvolumeclaims"}}}

	b := backupOf(t, ns,
		persistentVolume("pv-data", "Delete", "data"), claim("data", "snap-data"), snapshot("snap-data", "content-data"), content("content-data"),
		persistentVolume("pv-logs", "Delete", "logs"), claim("logs", "snap-logs"), snapshot("snap-logs", "content-logs"), content("content-logs"),
		snapshot("snap-old", "content-old"), content("content-old"))
	p, err := NewPlan(ctx, b, tgt, PlanOptions{Volumes: vols, Selection: claimsOnly, Extensions: Extensions{Plugins: reg}})
	require.NoError(t, err)
	excludedBy := map[string]string{}
	for o := range p.Objects() {
		excludedBy[o.Name] = o.ExcludedBy
	}
	for _, name := range []string{"data", "snap-data", "content-data", "logs", "snap-logs", "content-logs"} {
		assert.Empty(t, excludedBy[name], "%s is restored, for its claim", name)
	}
	assert.Equal(t, Filtered, excludedBy["snap-old"])
	assert.Equal(t, Filtered, excludedBy["content-old"])

	rep, err := Apply(ctx, p, tgt, RunOptions{Retry: fastRetry, Request: &ria.Restore{UID: "r1"}})
	require.NoError(t, err)
	require.True(t, rep.OK(), "summary %v, first failure: %v", rep.Summary, firstFailure(rep))
	vs, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}).
		Namespace("shop").Get(ctx, "r1-snap-data", metav1.GetOptions{})
	require.NoError(t, err, "made under the name the action gave it")
	assert.NotContains(t, vs.GetAnnotations(), MustIncludeAnnotation, "the note to the restore is taken off")
	assert.Equal(t, "yes", vs.GetAnnotations()["kept"])
	var reported []string
	for o := range rep.Objects() {
		if o.Kind == "VolumeSnapshot" && o.Status == Restored {
			reported = append(reported, o.TargetName)
		}
	}
	assert.ElementsMatch(t, []string{"r1-snap-data", "r1-snap-logs"}, reported)

	lacking := backupOf(t, ns, persistentVolume("pv-data", "Delete", "data"), claim("data", "snap-gone"))
	_, err = NewPlan(ctx, lacking, tgt, PlanOptions{Volumes: vols[:1], Selection: claimsOnly, Extensions: Extensions{Plugins: reg}})
	var ve *VolumeError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "shop/data", ve.Claim)
	assert.EqualError(t, err, "persistentvolumeclaim shop/data (csi snapshot): the backup holds no VolumeSnapshot shop/snap-gone")
}

// A claim to be made from a VolumeSnapshot that is not ready to use fails naming the
// snapshot and what the snapshot controller or the CSI snapshotter recorded on it or on
// its content, not only its own phase: its provisioner waits for the snapshot, and says
// no more on the claim than that it is not ready.
func TestAClaimNotBoundNamesItsSnapshotsError(t *testing.T) {
	fromSnapshot := func(name, snapshot string) map[string]any {
		c := pending(claimOf(name, "fast", ""))
		c["spec"].(map[string]any)["dataSource"] = map[string]any{"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": snapshot}
		return c
	}
	b := backupOf(t, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "uid-ns"}},
		fromSnapshot("gone", "snap-gone"), mounting("web-gone", "gone"),
		fromSnapshot("content-gone", "snap-content-gone"), fromSnapshot("unready", "snap-unready"), fromSnapshot("absent", "snap-absent"))
	_, tgt := cluster(t, memcluster.Options{})
	ctx := context.Background()
	_, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}).Create(ctx,
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
			"metadata": map[string]any{"name": "fast"}, "provisioner": "disk.example.io", "volumeBindingMode": "Immediate"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	serveSnapshots(t, tgt)
	_, err = tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx,
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// As the snapshot controller and the CSI snapshotter leave them.
	snapshots := tgt.Dynamic.Resource(schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}).Namespace("shop")
	for name, status := range map[string]map[string]any{
		"snap-gone":         {"readyToUse": false, "error": map[string]any{"message": `can not find snapshot for snapshotID "h-1"`}},
		"snap-content-gone": {"readyToUse": false, "boundVolumeSnapshotContentName": "content-2"},
		"snap-unready":      {"readyToUse": false},
	} {
		_, err := snapshots.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
			"metadata": map[string]any{"name": name, "namespace": "shop"}, "spec": map[string]any{}, "status": status}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err = tgt.Dynamic.Resource(schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotcontents"}).Create(ctx,
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
			"metadata": map[string]any{"name": "content-2"}, "spec": map[string]any{},
			"status": map[string]any{"readyToUse": false, "error": map[string]any{"message": "VolumeSnapshotClass \"gone\" not found"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)

	p, err := NewPlan(ctx, b, tgt, PlanOptions{})
	require.NoError(t, err)
	rep, err := Apply(ctx, p, tgt, RunOptions{Retry: fastRetry, ItemTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	results := byName(rep)
	for claim, why := range map[string]string{
		"gone":         `its VolumeSnapshot shop/snap-gone: can not find snapshot for snapshotID "h-1"`,
		"content-gone": `its VolumeSnapshot shop/snap-content-gone, content content-2: VolumeSnapshotClass "gone" not found`,
		"unready":      "its VolumeSnapshot shop/snap-unready is not ready to use",
		"absent":       `its VolumeSnapshot shop/snap-absent: volumesnapshots.snapshot.storage.k8s.io "snap-absent" not found`,
	} {
		res := results["persistentvolumeclaims/"+claim]
		assert.Equal(t, Failed, res.Status, claim)
		assert.Contains(t, res.Reason, "not Bound (phase is Pending; "+why+")", claim)
	}
	assert.Equal(t, Failed, results["pods/web-gone"].Status)
	assert.Contains(t, results["pods/web-gone"].Reason, "PersistentVolumeClaim shop/gone Failed")
}

// veleroActions stands for Velero's DataUpload action and CSI claim action of a data
// movement restore: the first leaves a result the second reads, as Velero's leave a
// ConfigMap; the claim action fails a claim whose result is not there yet.
type veleroActions struct {
	mu      sync.Mutex
	results map[string]bool // by claim
}

type dataUploadAction struct{ *veleroActions }

func (dataUploadAction) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"datauploads.velero.io"}}, nil
}

func (a dataUploadAction) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	claim, _, _ := unstructured.NestedString(in.Item.Object, "spec", "sourcePVC")
	a.mu.Lock()
	a.results[claim] = true
	a.mu.Unlock()
	return &ria.ExecuteOutput{SkipRestore: true}, nil
}

type dataMovedClaimAction struct{ *veleroActions }

func (dataMovedClaimAction) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"persistentvolumeclaims"}}, nil
}

func (a dataMovedClaimAction) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.results[in.Item.GetName()] {
		return nil, fmt.Errorf("no DataUpload result for claim %s", in.Item.GetName())
	}
	unstructured.RemoveNestedField(in.Item.Object, "spec", "volumeName")
	return &ria.ExecuteOutput{UpdatedItem: in.Item}, nil
}

// A claim whose data Velero moved brings the backup's DataUpload with it, from Velero's
// namespace and whatever the filter and the non-restorable list say, and waits for it:
// Velero's DataUpload action leaves the result the claim's action starts its
// DataDownload from, and skips the DataUpload itself. The plan says why the claim waits.
// Without Velero's DataUpload action the plan names the volume; a claim whose DataUpload
// the backup lacks is named too.
func TestDataMovedClaimsWaitForTheirDataUpload(t *testing.T) {
	claim := claimOf("data", "fast", "pv-data")
	claim["metadata"].(map[string]any)["annotations"].(map[string]any)[DataUploadAnnotation] = "velero/backup-1-x7k2p"
	upload := map[string]any{"apiVersion": "velero.io/v2alpha1", "kind": "DataUpload",
		"metadata": map[string]any{"name": "backup-1-x7k2p", "namespace": "velero", "uid": "uid-du"},
		"spec":     map[string]any{"sourcePVC": "data", "sourceNamespace": "shop", "datamover": "example.io/mover"},
		"status":   map[string]any{"phase": "Completed", "snapshotID": "s-1"}}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "uid-ns"}}
	b := backupOf(t, ns, persistentVolume("pv-data", "Delete", "data"), claim, upload, mounting("db", "data"))
	vols := []Volume{{PV: "pv-data", ClaimNamespace: "shop", Claim: "data", Method: VolumeDataMovement}}
	_, tgt := cluster(t, memcluster.Options{BindVolumes: true})
	ctx := context.Background()
	crd := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "datauploads.velero.io"},
		"spec": map[string]any{"group": "velero.io", "scope": "Namespaced", "versions": []any{map[string]any{"name": "v2alpha1", "served": true, "storage": true,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
			"names": map[string]any{"plural": "datauploads", "singular": "dataupload", "kind": "DataUpload", "listKind": "DataUploadList"}}}}
	_, err := tgt.Dynamic.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, lists, err := tgt.Discovery.ServerGroupsAndResources()
		return err == nil && slices.ContainsFunc(lists, func(l *metav1.APIResourceList) bool { return l.GroupVersion == "velero.io/v2alpha1" })
	}, 5*time.Second, 10*time.Millisecond)
	shopOnly := Selection{Filter: filter.Spec{IncludeNamespaces: []string{"shop"}}, NonRestorable: DefaultNonRestorable}

	var onlyClaims plugin.Registry
	require.NoError(t, onlyClaims.Register("velero.io/csi-pvc-restorer", plugin.V1, dataMovedClaimAction{&veleroActions{results: map[string]bool{}}}))
	_, err = NewPlan(ctx, b, tgt, PlanOptions{Volumes: vols, Selection: shopOnly, Extensions: Extensions{Plugins: &onlyClaims}})
	var ve *VolumeError
	require.ErrorAs(t, err, &ve)
	assert.Contains(t, err.Error(), "persistentvolume pv-data (data movement): its data comes back through Velero's action velero.io/dataupload")

	va := &veleroActions{results: map[string]bool{}}
	var reg plugin.Registry
	require.NoError(t, reg.Register("velero.io/dataupload", plugin.V1, dataUploadAction{va}))
	require.NoError(t, reg.Register("velero.io/csi-pvc-restorer", plugin.V1, dataMovedClaimAction{va}))
	p, err := NewPlan(ctx, b, tgt, PlanOptions{Volumes: vols, Selection: shopOnly, Extensions: Extensions{Plugins: &reg}})
	require.NoError(t, err)
	var waitsFor []string
	for o := range p.Objects() {
		switch o.Name {
		case "backup-1-x7k2p":
			assert.Empty(t, o.Excluded, "restored for the claim")
		case "data":
			for _, d := range o.DependsOn {
				waitsFor = append(waitsFor, d.Reason)
			}
		}
	}
	assert.Contains(t, strings.Join(waitsFor, "\n"), "velero-data-upload")
	rep, err := Apply(ctx, p, tgt, RunOptions{Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK(), "summary %v, first failure: %v", rep.Summary, firstFailure(rep))
	got := map[string]ObjectResult{}
	for o := range rep.Objects() {
		got[o.Name] = o
	}
	assert.Equal(t, Skipped, got["backup-1-x7k2p"].Status)
	assert.Equal(t, "velero.io/dataupload", got["backup-1-x7k2p"].SkippedBy)
	assert.Equal(t, Restored, got["data"].Status)
	assert.Equal(t, Restored, got["db"].Status)

	lacking := backupOf(t, ns, persistentVolume("pv-data", "Delete", "data"), claim)
	_, err = NewPlan(ctx, lacking, tgt, PlanOptions{Volumes: vols, Selection: shopOnly, Extensions: Extensions{Plugins: &reg}})
	require.ErrorAs(t, err, &ve)
	assert.EqualError(t, err, "persistentvolumeclaim shop/data (data movement): the backup holds no DataUpload velero/backup-1-x7k2p")
}

// fillingVolumes stands for Velero's node-agent: it fills the volumes of the Pods the
// backup's file-system backups name, and records what it was asked.
type fillingVolumes struct {
	mu     sync.Mutex
	byPod  map[string][]string
	filled []string // "namespace/name uid from sourceNamespace, restore"
	fail   error
}

func (f *fillingVolumes) Volumes(namespace, name string) []string { return f.byPod[namespace+"/"+name] }

func (f *fillingVolumes) RestorePodVolumes(_ context.Context, pod *unstructured.Unstructured, sourceNamespace string, req *ria.Restore) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.filled = append(f.filled, fmt.Sprintf("%s/%s %v from %s, %s", pod.GetNamespace(), pod.GetName(), pod.GetUID() != "", sourceNamespace, req.Name))
	return f.fail
}

type podVolumeAction struct{}

func (podVolumeAction) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"pods"}}, nil
}

func (podVolumeAction) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	return &ria.ExecuteOutput{UpdatedItem: in.Item}, nil
}

// A Pod whose volumes a file-system backup holds is restored before the ReplicaSet
// that owns it and that one's Deployment, without its owner reference (its controller adopts it), and is done
// once the PodVolumeRestorer has filled its volumes; the plan says why it comes first.
// One whose volumes are not filled fails, named. Without a PodVolumeRestorer the plan
// names the volume, and without Velero's pod volume action the Pod.
func TestFileSystemVolumesAreFilledBeforeTheirPodsController(t *testing.T) {
	ctx := context.Background()
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "uid-ns"}}
	dep := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "shop", "uid": "uid-dep"},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "shop/web:1.2"}}}}}}
	rs := map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": map[string]any{"name": "web", "namespace": "shop", "uid": "uid-rs",
		"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "uid-dep", "controller": true}}},
		"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "shop/web:1.2"}}}}}}
	web := mounting("web-1", "data")
	web["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "uid-rs", "controller": true}}
	sa := map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "app", "namespace": "shop", "uid": "uid-sa"}}
	b := backupOf(t, ns, sa, persistentVolume("pv-data", "Delete", "data"), claimOf("data", "fast", "pv-data"), dep, rs, web)
	vols := []Volume{{PV: "pv-data", ClaimNamespace: "shop", Claim: "data", Method: VolumeFileSystem}}
	_, tgt := cluster(t, memcluster.Options{BindVolumes: true})
	var withAction plugin.Registry
	require.NoError(t, withAction.Register(PodVolumeAction, plugin.V1, podVolumeAction{}))

	_, err := NewPlan(ctx, b, tgt, PlanOptions{Volumes: vols, Extensions: Extensions{Plugins: &withAction}})
	var ve *VolumeError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "pv-data", ve.PV)
	assert.Contains(t, err.Error(), "persistentvolume pv-data (file system): its files come back through the PodVolumeRestores of Velero's node-agent")
	no := false
	p, err := NewPlan(ctx, b, tgt, PlanOptions{Volumes: vols, Selection: Selection{RestorePVs: &no}, Extensions: Extensions{Plugins: &withAction}})
	require.NoError(t, err, "restorePVs false restores the claim empty")
	assert.False(t, p.FillsPodVolumes(), "no PodVolumeRestorer")

	fill := &fillingVolumes{byPod: map[string][]string{"shop/web-1": {"data"}}}
	_, err = NewPlan(ctx, b, tgt, PlanOptions{Volumes: vols, Extensions: Extensions{PodVolumes: fill}})
	require.ErrorAs(t, err, &ve)
	assert.Contains(t, err.Error(), "pod shop/web-1 (file system): its volumes' files come back through Velero's action velero.io/pod-volume-restore, "+
		"which this restore does not run: give Velero's plugins (the velero command)")

	p, err = NewPlan(ctx, b, tgt, PlanOptions{Volumes: vols, Extensions: Extensions{PodVolumes: fill, Plugins: &withAction}})
	require.NoError(t, err)
	assert.True(t, p.FillsPodVolumes())
	var rsWaitsFor []string
	for o := range p.Objects() {
		if o.Name == "web" {
			for _, d := range o.DependsOn {
				rsWaitsFor = append(rsWaitsFor, d.Reason)
			}
		}
	}
	assert.Contains(t, strings.Join(rsWaitsFor, "\n"), "pod-volumes-first")
	rep, err := Apply(ctx, p, tgt, RunOptions{Name: "fs-1", Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK(), "summary %v, first failure: %v", rep.Summary, firstFailure(rep))
	assert.Equal(t, []string{"shop/web-1 true from shop, fs-1"}, fill.filled)
	var text strings.Builder
	require.NoError(t, rep.WriteText(&text))
	assert.Contains(t, text.String(), "Volume    Pod shop/web-1: file system, restored", "the report says how the Pod's volumes came back")
	got := map[string]ObjectResult{}
	for o := range rep.Objects() {
		got[o.Resource+"/"+o.Name] = o
	}
	for _, owner := range []string{"replicasets/web", "deployments/web"} {
		assert.True(t, got["pods/web-1"].Ended.Before(got[owner].Started), "the Pod is done, its volumes filled, before %s starts", owner)
	}
	pod, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("shop").Get(ctx, "web-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, pod.GetOwnerReferences(), "its controller adopts it")

	_, tgt = cluster(t, memcluster.Options{BindVolumes: true})
	broken := &fillingVolumes{byPod: fill.byPod, fail: errors.New("PodVolumeRestore velero/fs-1-x: failed: no space left")}
	p, err = NewPlan(ctx, b, tgt, PlanOptions{Volumes: vols, Extensions: Extensions{PodVolumes: broken, Plugins: &withAction}})
	require.NoError(t, err)
	rep, err = Apply(ctx, p, tgt, RunOptions{Name: "fs-2", Retry: fastRetry})
	require.NoError(t, err)
	for o := range rep.Objects() {
		if o.Name == "web-1" {
			assert.Equal(t, Failed, o.Status)
			assert.Contains(t, o.Reason, "pod volumes [data]: PodVolumeRestore velero/fs-1-x: failed: no space left")
		}
	}
}

// A Pod an earlier run created whose volumes it was filling, found in the journal when
// the restore runs again, has its volumes' filling followed again (the restorer finds
// what it started), not taken as done.
func TestAJournaledPodsVolumesAreFollowed(t *testing.T) {
	ctx := context.Background()
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "uid-ns"}}
	b := backupOf(t, ns, persistentVolume("pv-data", "Delete", "data"), claimOf("data", "fast", "pv-data"), mounting("web-1", "data"))
	vols := []Volume{{PV: "pv-data", ClaimNamespace: "shop", Claim: "data", Method: VolumeFileSystem}}
	_, tgt := cluster(t, memcluster.Options{BindVolumes: true})
	var withAction plugin.Registry
	require.NoError(t, withAction.Register(PodVolumeAction, plugin.V1, podVolumeAction{}))
	path := t.TempDir() + "/journal"

	stopped := &fillingVolumes{byPod: map[string][]string{"shop/web-1": {"data"}}, fail: context.Canceled}
	journal := openJournal(t, path)
	rep, err := Run(ctx, b, tgt, PlanOptions{Volumes: vols, Extensions: Extensions{PodVolumes: stopped, Plugins: &withAction}},
		RunOptions{Name: "fs-1", Journal: journal, Retry: fastRetry})
	require.NoError(t, err)
	require.False(t, rep.OK(), "the first run ends before the volumes are filled")
	require.NoError(t, journal.Close())

	again := &fillingVolumes{byPod: stopped.byPod}
	journal = openJournal(t, path)
	defer journal.Close()
	rep, err = Run(ctx, b, tgt, PlanOptions{Volumes: vols, Extensions: Extensions{PodVolumes: again, Plugins: &withAction}},
		RunOptions{Name: "fs-1", Journal: journal, Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK(), "summary %v, first failure: %v", rep.Summary, firstFailure(rep))
	assert.Equal(t, []string{"shop/web-1 true from shop, fs-1"}, again.filled, "the journaled Pod's volumes are followed")
	for o := range rep.Objects() {
		if o.Name == "web-1" {
			assert.True(t, o.FromJournal)
		}
	}
}

// unlistedClasses is a target's dynamic client that may not list StorageClasses.
type unlistedClasses struct{ dynamic.Interface }

func (u unlistedClasses) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	if gvr.Resource == "storageclasses" {
		return refusedList{u.Interface.Resource(gvr)}
	}
	return u.Interface.Resource(gvr)
}

type refusedList struct {
	dynamic.NamespaceableResourceInterface
}

func (refusedList) List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return nil, apierrors.NewForbidden(schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"}, "", errors.New("no list"))
}

// A target whose StorageClasses the restore may not list is taken to have none, and
// the plan says so: no claim is waited for that its class would have bound at once.
func TestUnlistedStorageClassesAreWarnedOf(t *testing.T) {
	b := backupOf(t,
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "uid-ns"}},
		claimOf("data-fast", "fast", ""), mounting("web-fast", "data-fast"))
	_, tgt := cluster(t, memcluster.Options{})
	ctx := context.Background()
	_, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}).Create(ctx,
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
			"metadata": map[string]any{"name": "fast"}, "provisioner": "disk.example.io"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	tgt.Dynamic = unlistedClasses{tgt.Dynamic}
	p, err := NewPlan(ctx, b, tgt, PlanOptions{})
	require.NoError(t, err)
	assert.True(t, slices.ContainsFunc(p.Warnings, func(w string) bool {
		return strings.HasPrefix(w, "the target's StorageClasses could not be listed, so no claim bound through one of them is waited for: ")
	}), "%q", p.Warnings)
	for o := range p.Objects() {
		if o.Name == "data-fast" {
			assert.Equal(t, "not waited for: the target has no storage class fast", o.Gate)
		}
	}
}
