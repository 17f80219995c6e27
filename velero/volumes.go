package velero

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/restore"
)

// The methods of Velero's volume information (BackupVolumeInfo.BackupMethod).
const (
	methodNativeSnapshot  = "NativeSnapshot"
	methodPodVolumeBackup = "PodVolumeBackup"
	methodCSISnapshot     = "CSISnapshot"
)

// volumeInfo is one entry of a backup's NAME-volumeinfo.json.gz, as Velero writes it
// (its internal/volume.BackupVolumeInfo): the fields a restore decides by.
type volumeInfo struct {
	PVCName           string `json:"pvcName"`
	PVCNamespace      string `json:"pvcNamespace"`
	PVName            string `json:"pvName"`
	BackupMethod      string `json:"backupMethod"`
	SnapshotDataMoved bool   `json:"snapshotDataMoved"`
	Skipped           bool   `json:"skipped"`
}

// nativeSnapshot is one entry of a backup's NAME-volumesnapshots.json.gz: a snapshot a
// VolumeSnapshotter made, and the location it was made through (Velero's
// internal/volume.Snapshot).
type nativeSnapshot struct {
	Spec struct {
		Location             string `json:"location"`
		PersistentVolumeName string `json:"persistentVolumeName"`
		VolumeType           string `json:"volumeType"`
		VolumeAZ             string `json:"volumeAZ"`
		VolumeIOPS           *int64 `json:"volumeIOPS"`
	} `json:"spec"`
	Status struct {
		ProviderSnapshotID string `json:"providerSnapshotID"`
		Phase              string `json:"phase"`
	} `json:"status"`
}

// VolumeFileError is a record beside a backup that cannot be read: which, and why.
type VolumeFileError struct {
	Key string
	Err error
}

func (e *VolumeFileError) Error() string {
	return fmt.Sprintf("the backup's volume records %s: %v", e.Key, e.Err)
}
func (e *VolumeFileError) Unwrap() error { return e.Err }

// ReadVolumes reads what Velero recorded beside the backup whose tarball is key in src
// of its PersistentVolumes' data: NAME-volumeinfo.json.gz (how each volume was backed
// up) and NAME-volumesnapshots.json.gz (the native snapshots, with the
// VolumeSnapshotLocation each was made through). A backup with neither has no records:
// each of its volumes comes back by its reclaim policy. A backup written before Velero
// kept volume information (1.13) has only its native snapshots read; its CSI snapshots
// and pod volume backups are not recognised.
func ReadVolumes(ctx context.Context, src archive.Source, key string) ([]restore.Volume, error) {
	dir := path.Dir(key)
	name := strings.TrimSuffix(path.Base(key), ".tar.gz")
	var infos []volumeInfo
	if err := readGzipJSON(ctx, src, path.Join(dir, name+"-volumeinfo.json.gz"), &infos); err != nil {
		return nil, err
	}
	var snaps []nativeSnapshot
	if err := readGzipJSON(ctx, src, path.Join(dir, name+"-volumesnapshots.json.gz"), &snaps); err != nil {
		return nil, err
	}
	bySnapshot := map[string]*restore.NativeSnapshot{}
	for _, s := range snaps {
		if s.Status.ProviderSnapshotID == "" {
			continue // a snapshot that did not complete
		}
		bySnapshot[s.Spec.PersistentVolumeName] = &restore.NativeSnapshot{Location: s.Spec.Location, ID: s.Status.ProviderSnapshotID,
			VolumeType: s.Spec.VolumeType, AZ: s.Spec.VolumeAZ, IOPS: s.Spec.VolumeIOPS}
	}
	var out []restore.Volume
	seen := map[string]bool{}
	for _, info := range infos {
		if info.PVName == "" {
			continue // a pod volume without a PersistentVolume: nothing for a restore to decide
		}
		v := restore.Volume{PV: info.PVName, ClaimNamespace: info.PVCNamespace, Claim: info.PVCName}
		switch {
		case info.Skipped:
		case info.BackupMethod == methodNativeSnapshot:
			v.Method, v.Snapshot = restore.VolumeNativeSnapshot, bySnapshot[info.PVName]
		case info.BackupMethod == methodPodVolumeBackup:
			v.Method = restore.VolumeFileSystem
		case info.BackupMethod == methodCSISnapshot && info.SnapshotDataMoved:
			v.Method = restore.VolumeDataMovement
		case info.BackupMethod == methodCSISnapshot:
			v.Method = restore.VolumeCSISnapshot
		}
		out = append(out, v)
		seen[info.PVName] = true
	}
	for pv, s := range bySnapshot {
		if !seen[pv] {
			out = append(out, restore.Volume{PV: pv, Method: restore.VolumeNativeSnapshot, Snapshot: s})
		}
	}
	return out, nil
}

// readGzipJSON decodes the gzipped JSON at key into v; a key src does not hold leaves v
// as it is.
func readGzipJSON(ctx context.Context, src archive.Source, key string, v any) error {
	rc, err := src.Open(ctx, key, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &VolumeFileError{Key: key, Err: err}
	}
	defer rc.Close()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		return &VolumeFileError{Key: key, Err: err}
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return &VolumeFileError{Key: key, Err: err}
	}
	if err := json.Unmarshal(data, v); err != nil {
		return &VolumeFileError{Key: key, Err: err}
	}
	return nil
}
