package pluginhost

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero/internal/testbin"
)

// hostPathVolume is a PersistentVolume over ROOT/volumes/ID, bound to claim shop/name,
// and the claim.
func hostPathVolume(root, id, name string) (pv, claim map[string]any) {
	pv = map[string]any{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": map[string]any{"name": "pv-" + name, "uid": "uid-pv-" + name},
		"spec": map[string]any{"capacity": map[string]any{"storage": "1Gi"}, "accessModes": []any{"ReadWriteOnce"}, "persistentVolumeReclaimPolicy": "Retain",
			"hostPath": map[string]any{"path": filepath.Join(root, "volumes", id)},
			"claimRef": map[string]any{"kind": "PersistentVolumeClaim", "namespace": "shop", "name": name, "uid": "uid-" + name}}}
	claim = obj("PersistentVolumeClaim", name)
	claim["spec"] = map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}},
		"storageClassName": "", "volumeName": "pv-" + name}
	return pv, claim
}

// A VolumeSnapshotter plugin built with Velero's framework makes each volume of its
// snapshot out of process, and points the PersistentVolume at it: the restored volume
// holds what the snapshot held, and its claim binds to it. A snapshot the provider no
// longer has fails its PersistentVolume, named, and what needs it; the rest is
// restored. A provider no plugin serves is ErrNoVolumeSnapshotter, with what is served.
func TestVolumeSnapshotterOutOfProcess(t *testing.T) {
	bin := testbin.DirDisks(t)
	ctx := context.Background()
	h := &Host{}
	t.Cleanup(h.Close)
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "snapshots", "snap-1"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "snapshots", "snap-1", "content.txt"), []byte("in the snapshot\n"), 0o644))

	_, err := h.VolumeSnapshotter(ctx, "example.io/nope", nil, []string{bin})
	require.ErrorIs(t, err, ErrNoVolumeSnapshotter)
	assert.ErrorContains(t, err, "serve example.io/dir-disks")
	_, err = h.VolumeSnapshotter(ctx, "example.io/dir-disks", map[string]string{}, []string{bin})
	assert.ErrorContains(t, err, "config: root is required", "Init's error")

	vs, err := h.VolumeSnapshotter(ctx, "example.io/dir-disks", map[string]string{"root": root, "zone": "a"}, []string{bin})
	require.NoError(t, err)
	dataPV, dataClaim := hostPathVolume(root, "data", "data")
	gonePV, goneClaim := hostPathVolume(root, "gone", "gone")
	b := backupOf(t, obj("Namespace", "shop"), dataPV, dataClaim, gonePV, goneClaim, pod("db", "data"), pod("lost", "gone"))
	s, err := memcluster.StartServer(memcluster.Options{BindVolumes: true})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	tgt, err := restore.NewTarget(s.Config())
	require.NoError(t, err)
	vols := []restore.Volume{
		{PV: "pv-data", ClaimNamespace: "shop", Claim: "data", Method: restore.VolumeNativeSnapshot,
			Snapshot: &restore.NativeSnapshot{Location: "default", ID: "snap-1", VolumeType: "dir", AZ: "a"}},
		{PV: "pv-gone", ClaimNamespace: "shop", Claim: "gone", Method: restore.VolumeNativeSnapshot,
			Snapshot: &restore.NativeSnapshot{Location: "default", ID: "snap-gone", VolumeType: "dir", AZ: "a"}},
	}
	p, err := restore.NewPlan(ctx, b, tgt, restore.PlanOptions{Volumes: vols,
		Extensions: restore.Extensions{VolumeSnapshotters: map[string]restore.VolumeSnapshotter{"default": vs}}})
	require.NoError(t, err)
	rep, err := restore.Apply(ctx, p, tgt, restore.RunOptions{})
	require.NoError(t, err)
	got := byName(rep)
	assert.Equal(t, restore.Restored, got["PersistentVolume/pv-data"].Status, got["PersistentVolume/pv-data"].Reason)
	assert.Equal(t, restore.Restored, got["PersistentVolumeClaim/data"].Status, got["PersistentVolumeClaim/data"].Reason)
	assert.Equal(t, restore.Restored, got["Pod/db"].Status)
	assert.Equal(t, restore.Failed, got["PersistentVolume/pv-gone"].Status)
	assert.Contains(t, got["PersistentVolume/pv-gone"].Reason, "snapshot snap-gone")
	assert.NotEqual(t, restore.Restored, got["Pod/lost"].Status, "the Pod of a volume that did not come back")

	pv, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}).Get(ctx, "pv-data", metav1.GetOptions{})
	require.NoError(t, err)
	path, _, _ := unstructured.NestedString(pv.Object, "spec", "hostPath", "path")
	assert.True(t, strings.HasPrefix(path, filepath.Join(root, "volumes", "from-snap-1-")), path)
	content, err := os.ReadFile(filepath.Join(path, "content.txt"))
	require.NoError(t, err)
	assert.Equal(t, "in the snapshot\n", string(content))
}
