package velero

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/manifest"
)

// ErrBackupExists is returned when a backup of the name is in the location already:
// none is ever written over, for a backup written over is one lost.
var ErrBackupExists = errors.New("a backup of that name is in the location already")

// BackupRecord is what Velero keeps beside a backup's tarball, so that its backup sync
// lists the backup and `velero backup describe --details|logs` show it: the Backup
// object (velero-backup.json), the resource list and the log; and the manifest, for
// tools that plan without the tarball.
type BackupRecord struct {
	// Name is the backup's; Namespace Velero's, and Location the BackupStorageLocation
	// the Backup object names.
	Name, Namespace, Location string
	// Filter is what the backup selected, written in the Backup's spec as Velero's.
	Filter             filter.Spec
	Started, Completed time.Time
	Manifest           *manifest.Manifest
	// Errors counts what could not be backed up (the Backup is PartiallyFailed then);
	// Warnings what was left out.
	Errors, Warnings int
	Log              []byte
}

// File is one file of a record, by its name in the backup's or restore's directory.
type File struct {
	Name string
	Data []byte
}

// Files returns the record's files in the order to write them: velero-backup.json last,
// for Velero's sync takes a backup once that is there, and by then all the rest is.
func (r BackupRecord) Files() ([]File, error) {
	var m bytes.Buffer
	if err := manifest.EncodeGzip(&m, r.Manifest); err != nil {
		return nil, fmt.Errorf("the manifest: %w", err)
	}
	list, err := gzipJSON(resourceList(r.Manifest))
	if err != nil {
		return nil, fmt.Errorf("the resource list: %w", err)
	}
	logs, err := gzipBytes(r.Log)
	if err != nil {
		return nil, fmt.Errorf("the log: %w", err)
	}
	b, err := r.Backup()
	if err != nil {
		return nil, fmt.Errorf("velero-backup.json: %w", err)
	}
	obj, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("velero-backup.json: %w", err)
	}
	return []File{
		{r.Name + "-manifest.json.gz", m.Bytes()},
		{r.Name + "-resource-list.json.gz", list},
		{r.Name + "-logs.gz", logs},
		{"velero-backup.json", obj},
	}, nil
}

// Backup is the Backup Velero's sync makes of the backup: its name, location, what it
// selected, the tarball's format, and phase Completed, or PartiallyFailed when
// something could not be backed up.
func (r BackupRecord) Backup() (*velerov1.Backup, error) {
	const ttl = 30 * 24 * time.Hour // Velero's default
	f := r.Filter
	spec := velerov1.BackupSpec{IncludedNamespaces: f.IncludeNamespaces, ExcludedNamespaces: f.ExcludeNamespaces,
		IncludedResources: f.IncludeResources, ExcludedResources: f.ExcludeResources, IncludeClusterResources: f.IncludeClusterResources,
		StorageLocation: r.Location, TTL: metav1.Duration{Duration: ttl}}
	if len(spec.IncludedNamespaces) == 0 {
		spec.IncludedNamespaces = []string{"*"}
	}
	var err error
	if f.Selector != nil && !f.Selector.Empty() {
		if spec.LabelSelector, err = metav1.ParseToLabelSelector(f.Selector.String()); err != nil {
			return nil, err
		}
	}
	for _, or := range f.OrSelectors {
		ls, err := metav1.ParseToLabelSelector(or.String())
		if err != nil {
			return nil, err
		}
		spec.OrLabelSelectors = append(spec.OrLabelSelectors, ls)
	}
	phase := velerov1.BackupPhaseCompleted
	if r.Errors > 0 {
		phase = velerov1.BackupPhasePartiallyFailed
	}
	at := func(t time.Time) *metav1.Time { m := metav1.NewTime(t.UTC().Truncate(time.Second)); return &m }
	objects := r.Manifest.Len()
	return &velerov1.Backup{
		TypeMeta: metav1.TypeMeta{APIVersion: velerov1.SchemeGroupVersion.String(), Kind: "Backup"},
		ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: r.Namespace,
			Labels: map[string]string{velerov1.StorageLocationLabel: r.Location}},
		Spec: spec,
		Status: velerov1.BackupStatus{Version: 1, FormatVersion: "1.1.0", Phase: phase,
			StartTimestamp: at(r.Started), CompletionTimestamp: at(r.Completed), Expiration: at(r.Completed.Add(ttl)),
			Progress: &velerov1.BackupProgress{TotalItems: objects, ItemsBackedUp: objects},
			Errors:   r.Errors, Warnings: r.Warnings},
	}, nil
}

// resourceList is Velero's NAME-resource-list.json.gz of a backup: each kind's objects,
// namespace/name or name.
func resourceList(m *manifest.Manifest) map[string][]string {
	out := map[string][]string{}
	for _, it := range m.Items() {
		key := ResourceListKey(it.Group, it.Version, it.Kind)
		name := it.Name
		if it.Namespace != "" {
			name = it.Namespace + "/" + name
		}
		out[key] = append(out[key], name)
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}

// Bucket is where a backup is written as Velero keeps it: a location's Store, or a
// bucket reached by URL (package bucket).
type Bucket interface {
	Exists(ctx context.Context, key string) (bool, error)
	Put(ctx context.Context, key string, body io.Reader) error
}

// CheckBackupFree returns an error wrapping ErrBackupExists when b holds a backup at
// tarball key (its tarball, or a velero-backup.json beside it). Any other error is the
// bucket's.
func CheckBackupFree(ctx context.Context, b Bucket, key string) error {
	for _, k := range []string{path.Join(path.Dir(key), "velero-backup.json"), key} {
		there, err := b.Exists(ctx, k)
		if err != nil {
			return err
		}
		if there {
			return fmt.Errorf("%w: %s", ErrBackupExists, k)
		}
	}
	return nil
}

// PutBackup writes the tarball to key in b, and rec's files beside it, velero-backup.json
// last: Velero's sync takes a backup once that is there, and by then all the rest is.
func PutBackup(ctx context.Context, b Bucket, key string, tarball io.Reader, rec BackupRecord) error {
	files, err := rec.Files()
	if err != nil {
		return err
	}
	if err := b.Put(ctx, key, tarball); err != nil {
		return fmt.Errorf("writing %s: %w", key, err)
	}
	for _, f := range files {
		k := path.Join(path.Dir(key), f.Name)
		if err := b.Put(ctx, k, bytes.NewReader(f.Data)); err != nil {
			return fmt.Errorf("writing %s: %w", k, err)
		}
	}
	return nil
}
