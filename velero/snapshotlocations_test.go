package velero

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero/internal/testbin"
	"github.com/restoregraph/restoregraph/velero/pluginhost"
)

// Each VolumeSnapshotLocation a backup's native snapshots were made through gets its
// VolumeSnapshotter, out of process and configured as Velero configures it (its
// credential as a file, removed once done); a location that is missing, or whose
// provider no plugin serves, stands as an UnavailableSnapshotter saying so, and the plan
// names each volume of it. Each snapshot is told its location's provider.
func TestVolumeSnapshottersOfTheBackupsLocations(t *testing.T) {
	ctx := context.Background()
	bin := testbin.DirDisks(t) // built before TMPDIR is the test's
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	credentialFiles := func() []string {
		files, err := filepath.Glob(filepath.Join(tmp, "restoregraph-credentials-*"))
		require.NoError(t, err)
		return files
	}
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, ".credentials"), []byte(credentials), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "snapshots", "snap-1"), 0o755))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloud-credentials", Namespace: "velero"}, Data: map[string][]byte{"cloud": []byte(credentials)}}
	v := client(secret,
		veleroObject("VolumeSnapshotLocation", "default", nil, map[string]any{"provider": "example.io/dir-disks",
			"config": map[string]any{"root": root, "zone": "a"}, "credential": map[string]any{"name": "cloud-credentials", "key": "cloud"}}, nil),
		veleroObject("VolumeSnapshotLocation", "elsewhere", nil, map[string]any{"provider": "aws", "config": map[string]any{"region": "x"}}, nil))
	native := func(pv, location, id string) restore.Volume {
		return restore.Volume{PV: pv, Method: restore.VolumeNativeSnapshot, Snapshot: &restore.NativeSnapshot{Location: location, ID: id, VolumeType: "dir", AZ: "a"}}
	}
	vols := []restore.Volume{native("pv-a", "default", "snap-1"), native("pv-b", "default", "snap-2"), native("pv-c", "elsewhere", "snap-3"),
		native("pv-d", "gone", "snap-4"), {PV: "pv-e", Method: restore.VolumeCSISnapshot}}

	h := &pluginhost.Host{}
	defer h.Close()
	snapshotters, done := v.VolumeSnapshotters(ctx, h, vols, []string{bin})
	require.Len(t, snapshotters, 3)
	id, err := snapshotters["default"].CreateVolumeFromSnapshot(ctx, *vols[0].Snapshot)
	require.NoError(t, err, "initialized with the location's config and credential")
	assert.DirExists(t, filepath.Join(root, "volumes", id))
	assert.Equal(t, "example.io/dir-disks", vols[1].Snapshot.Provider)
	assert.Equal(t, "aws", vols[2].Snapshot.Provider)

	elsewhere, ok := snapshotters["elsewhere"].(restore.UnavailableSnapshotter)
	require.True(t, ok)
	assert.ErrorIs(t, elsewhere.Err, pluginhost.ErrNoVolumeSnapshotter)
	assert.ErrorContains(t, elsewhere.Err, "velero.io/aws")
	gone, ok := snapshotters["gone"].(restore.UnavailableSnapshotter)
	require.True(t, ok)
	assert.ErrorIs(t, gone.Err, ErrSnapshotLocationNotFound)
	assert.ErrorContains(t, gone.Err, "velero/gone")

	assert.Len(t, credentialFiles(), 1, "the credential written for the plugin")
	done()
	assert.Empty(t, credentialFiles(), "and removed once done")
}
