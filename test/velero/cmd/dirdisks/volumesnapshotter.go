package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/restoregraph/restoregraph/test/velero/internal/credentials"
)

// dirDisks is a VolumeSnapshotter (Velero's interface) over a directory, ROOT being the
// location's config "root": a PersistentVolume whose hostPath is ROOT/volumes/ID is the
// provider's volume ID, a snapshot of it the copy ROOT/snapshots/SNAPSHOT, and a volume
// made of a snapshot a new copy under ROOT/volumes. Its volumes' type is "dir", in the
// zone the location's config "zone" names. When ROOT/.credentials exists, Init requires
// the location's credentialsFile to hold the same bytes, as a provider checks its
// credentials.
type dirDisks struct{ root, zone string }

func newDirDisks(logrus.FieldLogger) (any, error) { return &dirDisks{}, nil }

func (d *dirDisks) Init(config map[string]string) error {
	d.root, d.zone = config["root"], config["zone"]
	if d.root == "" {
		return errors.New("config: root is required")
	}
	return credentials.Check(d.root, config)
}

func (d *dirDisks) volume(id string) string   { return filepath.Join(d.root, "volumes", id) }
func (d *dirDisks) snapshot(id string) string { return filepath.Join(d.root, "snapshots", id) }

// unique is a suffix no other copy of this process or another has.
func unique() string { return strconv.FormatInt(time.Now().UnixNano(), 36) }

func (d *dirDisks) CreateVolumeFromSnapshot(snapshotID, volumeType, volumeAZ string, _ *int64) (string, error) {
	if _, err := os.Stat(d.snapshot(snapshotID)); err != nil {
		return "", fmt.Errorf("snapshot %s: %w", snapshotID, err)
	}
	if volumeType != "dir" || volumeAZ != d.zone {
		return "", fmt.Errorf("snapshot %s: a volume of type %q in zone %q: this provider makes type \"dir\" in zone %q", snapshotID, volumeType, volumeAZ, d.zone)
	}
	id := "from-" + snapshotID + "-" + unique()
	if err := os.CopyFS(d.volume(id), os.DirFS(d.snapshot(snapshotID))); err != nil {
		return "", err
	}
	return id, nil
}

func (d *dirDisks) GetVolumeInfo(volumeID, volumeAZ string) (string, *int64, error) {
	if _, err := os.Stat(d.volume(volumeID)); err != nil {
		return "", nil, err
	}
	return "dir", nil, nil
}

func (d *dirDisks) CreateSnapshot(volumeID, volumeAZ string, _ map[string]string) (string, error) {
	id := volumeID + "-" + unique()
	if err := os.CopyFS(d.snapshot(id), os.DirFS(d.volume(volumeID))); err != nil {
		return "", err
	}
	return id, nil
}

func (d *dirDisks) DeleteSnapshot(snapshotID string) error {
	return os.RemoveAll(d.snapshot(snapshotID))
}

func (d *dirDisks) GetVolumeID(pv runtime.Unstructured) (string, error) {
	path, _, _ := unstructured.NestedString(pv.UnstructuredContent(), "spec", "hostPath", "path")
	id, ok := strings.CutPrefix(path, d.volume("")+string(filepath.Separator))
	if !ok {
		return "", nil // not one of this provider's volumes
	}
	return id, nil
}

func (d *dirDisks) SetVolumeID(pv runtime.Unstructured, volumeID string) (runtime.Unstructured, error) {
	if _, ok, _ := unstructured.NestedString(pv.UnstructuredContent(), "spec", "hostPath", "path"); !ok {
		return nil, errors.New("the PersistentVolume has no hostPath")
	}
	out := &unstructured.Unstructured{Object: pv.UnstructuredContent()}
	return out, unstructured.SetNestedField(out.Object, d.volume(volumeID), "spec", "hostPath", "path")
}
