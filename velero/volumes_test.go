package velero

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/restore"
)

func writeGzipJSON(t *testing.T, path string, v any) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	require.NoError(t, json.NewEncoder(zw).Encode(v))
	require.NoError(t, zw.Close())
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

// A backup's volume records, as Velero writes them beside its tarball, say how each
// volume comes back: its volume information the method, its native snapshots the
// snapshot and the location it was made through.
func TestReadVolumes(t *testing.T) {
	dir := t.TempDir()
	key := archive.TarballKey("velero", "nightly")
	writeGzipJSON(t, filepath.Join(dir, filepath.Dir(key), "nightly-volumeinfo.json.gz"), []map[string]any{
		{"pvcName": "data-csi", "pvcNamespace": "shop", "pvName": "pv-csi", "backupMethod": "CSISnapshot", "snapshotDataMoved": false, "skipped": false},
		{"pvcName": "data-moved", "pvcNamespace": "shop", "pvName": "pv-moved", "backupMethod": "CSISnapshot", "snapshotDataMoved": true, "skipped": false},
		{"pvcName": "data-fs", "pvcNamespace": "shop", "pvName": "pv-fs", "backupMethod": "PodVolumeBackup", "snapshotDataMoved": false, "skipped": false},
		{"pvcName": "data-disk", "pvcNamespace": "shop", "pvName": "pv-disk", "backupMethod": "NativeSnapshot", "snapshotDataMoved": false, "skipped": false},
		{"pvcName": "data-skipped", "pvcNamespace": "shop", "pvName": "pv-skipped", "snapshotDataMoved": false, "skipped": true, "skippedReason": "excluded by policy"},
		{"pvcName": "scratch", "pvcNamespace": "shop", "backupMethod": "PodVolumeBackup", "snapshotDataMoved": false, "skipped": false},
	})
	iops := int64(3000)
	writeGzipJSON(t, filepath.Join(dir, filepath.Dir(key), "nightly-volumesnapshots.json.gz"), []map[string]any{
		{"spec": map[string]any{"backupName": "nightly", "location": "aws-east", "persistentVolumeName": "pv-disk", "providerVolumeID": "vol-1",
			"volumeType": "gp3", "volumeAZ": "us-east-1a", "volumeIOPS": iops}, "status": map[string]any{"providerSnapshotID": "snap-1", "phase": "Completed"}},
	})
	vols, err := ReadVolumes(context.Background(), archive.DirSource(dir), key)
	require.NoError(t, err)
	assert.Equal(t, []restore.Volume{
		{PV: "pv-csi", ClaimNamespace: "shop", Claim: "data-csi", Method: restore.VolumeCSISnapshot},
		{PV: "pv-moved", ClaimNamespace: "shop", Claim: "data-moved", Method: restore.VolumeDataMovement},
		{PV: "pv-fs", ClaimNamespace: "shop", Claim: "data-fs", Method: restore.VolumeFileSystem},
		{PV: "pv-disk", ClaimNamespace: "shop", Claim: "data-disk", Method: restore.VolumeNativeSnapshot,
			Snapshot: &restore.NativeSnapshot{Location: "aws-east", ID: "snap-1", VolumeType: "gp3", AZ: "us-east-1a", IOPS: &iops}},
		{PV: "pv-skipped", ClaimNamespace: "shop", Claim: "data-skipped"},
	}, vols)

	none, err := ReadVolumes(context.Background(), archive.DirSource(dir), archive.TarballKey("velero", "weekly"))
	require.NoError(t, err)
	assert.Empty(t, none, "a backup without records")

	require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Dir(key), "nightly-volumeinfo.json.gz"), []byte("not gzip"), 0o644))
	_, err = ReadVolumes(context.Background(), archive.DirSource(dir), key)
	var fe *VolumeFileError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "velero/backups/nightly/nightly-volumeinfo.json.gz", fe.Key)
}
