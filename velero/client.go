package velero

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/restoregraph/restoregraph/archive"
)

// What finding a backup through Velero's objects can fail on; each error wraps one and
// names the object.
var (
	ErrBackupNotFound      = errors.New("no such backup")
	ErrBackupNotRestorable = errors.New("backup is not restorable")
	ErrNoBackupOfSchedule  = errors.New("no restorable backup of the schedule")
	ErrLocationNotFound    = errors.New("no such backup storage location")
	ErrLocationUnavailable = errors.New("backup storage location is unavailable")
	ErrLocationInvalid     = errors.New("backup storage location cannot be read")
	ErrSecretKey           = errors.New("the location's secret key is missing")
	ErrLocationReadOnly    = errors.New("backup storage location is read-only")
)

var (
	backupsResource   = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "backups"}
	locationsResource = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "backupstoragelocations"}
)

// scheduleLabel is the label Velero puts on the backups a Schedule makes.
const scheduleLabel = "velero.io/schedule-name"

// Client reads and writes Velero's own objects in its namespace: Backups, their
// BackupStorageLocations and the Secrets those name, and Restores.
type Client struct {
	Dynamic   dynamic.Interface
	Secrets   corev1client.SecretsGetter
	Namespace string // default "velero"
}

// Location is a BackupStorageLocation, as far as reading backups from it goes.
type Location struct {
	Name     string
	Provider string // as the location names it: "aws", "velero.io/aws"
	Bucket   string
	Prefix   string
	Config   map[string]string
	CACert   []byte
	// CACertRef and Credential name keys of Secrets in Velero's namespace.
	CACertRef, Credential *SecretKey
	Phase, Message        string
	AccessMode            string // ReadWrite (the default) or ReadOnly
}

// Writable says whether backups may be written to the location: Velero writes none to a
// ReadOnly one.
func (l Location) Writable() error {
	if l.AccessMode == "ReadOnly" {
		return fmt.Errorf("%w: %s (spec.accessMode ReadOnly): Velero writes no backup there, and neither does restoregraph", ErrLocationReadOnly, l.Name)
	}
	return nil
}

// SecretKey is one key of a Secret.
type SecretKey struct{ Name, Key string }

// Backup is a Velero Backup that can be restored, and where its tarball is kept.
type Backup struct {
	Name, Phase string
	Schedule    string // the Schedule that made it, if one did
	Started     time.Time
	Location    Location
}

// Key is the backup tarball's key in its location's bucket.
func (b *Backup) Key() string { return archive.TarballKey(b.Location.Prefix, b.Name) }

func (v Client) namespace() string {
	if v.Namespace == "" {
		return "velero"
	}
	return v.Namespace
}

// Backup reads backup name and its location, and checks that both serve a restore as
// Velero would: the backup Completed or PartiallyFailed, the location Available.
func (v Client) Backup(ctx context.Context, name string) (*Backup, error) {
	o, err := v.backupObject(ctx, name)
	if err != nil {
		return nil, err
	}
	b := veleroBackup(o)
	if b.Phase != "Completed" && b.Phase != "PartiallyFailed" {
		phase := b.Phase
		if phase == "" {
			phase = "New"
		}
		return nil, fmt.Errorf("%w: backup %s/%s is %s, not Completed or PartiallyFailed", ErrBackupNotRestorable, o.GetNamespace(), name, phase)
	}
	if b.Location, err = v.locationOf(ctx, o); err != nil {
		return nil, err
	}
	return b, nil
}

// BackupLocation is the location backup name is kept in, whatever the backup's phase and
// whether or not it serves a restore: where its restores' files are.
func (v Client) BackupLocation(ctx context.Context, name string) (Location, error) {
	o, err := v.backupObject(ctx, name)
	if err != nil {
		return Location{}, err
	}
	return v.locationOf(ctx, o)
}

// backupObject reads Backup name; ErrBackupNotFound when there is none.
func (v Client) backupObject(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	ns := v.namespace()
	o, err := v.Dynamic.Resource(backupsResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: %s/%s", ErrBackupNotFound, ns, name)
	}
	if err != nil {
		return nil, fmt.Errorf("backup %s/%s: %w", ns, name, err)
	}
	return o, nil
}

// locationOf reads the location Backup o names, as Location checks it.
func (v Client) locationOf(ctx context.Context, o *unstructured.Unstructured) (Location, error) {
	locName, _, _ := unstructured.NestedString(o.Object, "spec", "storageLocation")
	if locName == "" {
		return Location{}, fmt.Errorf("%w: backup %s/%s names no storage location", ErrLocationNotFound, o.GetNamespace(), o.GetName())
	}
	loc, err := v.Location(ctx, locName)
	if err != nil {
		return Location{}, fmt.Errorf("backup %s/%s: %w", o.GetNamespace(), o.GetName(), err)
	}
	return loc, nil
}

// LatestOfSchedule is the newest Completed backup schedule made, by start time, as
// `velero restore create --from-schedule` takes it; with allowPartiallyFailed the newest
// Completed or PartiallyFailed one, as with its --allow-partially-failed.
func (v Client) LatestOfSchedule(ctx context.Context, schedule string, allowPartiallyFailed bool) (*Backup, error) {
	ns := v.namespace()
	list, err := v.Dynamic.Resource(backupsResource).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: scheduleLabel + "=" + schedule})
	if err != nil {
		return nil, fmt.Errorf("backups of schedule %s/%s: %w", ns, schedule, err)
	}
	var latest *Backup
	for i := range list.Items {
		b := veleroBackup(&list.Items[i])
		ok := b.Phase == "Completed" || allowPartiallyFailed && b.Phase == "PartiallyFailed"
		if ok && (latest == nil || b.Started.After(latest.Started)) {
			latest = b
		}
	}
	if latest == nil {
		return nil, fmt.Errorf("%w %s/%s (of %d backups)", ErrNoBackupOfSchedule, ns, schedule, len(list.Items))
	}
	return v.Backup(ctx, latest.Name)
}

func veleroBackup(o *unstructured.Unstructured) *Backup {
	b := &Backup{Name: o.GetName(), Schedule: o.GetLabels()[scheduleLabel]}
	b.Phase, _, _ = unstructured.NestedString(o.Object, "status", "phase")
	if s, _, _ := unstructured.NestedString(o.Object, "status", "startTimestamp"); s != "" {
		b.Started, _ = time.Parse(time.RFC3339, s)
	}
	return b
}

// Location reads BackupStorageLocation name, and checks that Velero found it Available.
func (v Client) Location(ctx context.Context, name string) (Location, error) {
	ns := v.namespace()
	o, err := v.Dynamic.Resource(locationsResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Location{}, fmt.Errorf("%w: %s/%s", ErrLocationNotFound, ns, name)
	}
	if err != nil {
		return Location{}, fmt.Errorf("backup storage location %s/%s: %w", ns, name, err)
	}
	loc := Location{Name: name}
	str := func(fields ...string) string { s, _, _ := unstructured.NestedString(o.Object, fields...); return s }
	loc.Provider = str("spec", "provider")
	loc.Bucket = strings.Trim(str("spec", "objectStorage", "bucket"), "/")
	loc.Prefix = strings.Trim(str("spec", "objectStorage", "prefix"), "/")
	loc.Phase, loc.Message = str("status", "phase"), str("status", "message")
	loc.AccessMode = str("spec", "accessMode")
	loc.Config, _, _ = unstructured.NestedStringMap(o.Object, "spec", "config")
	if s := str("spec", "objectStorage", "caCert"); s != "" {
		if loc.CACert, err = base64.StdEncoding.DecodeString(s); err != nil {
			return Location{}, fmt.Errorf("%w: %s/%s: spec.objectStorage.caCert: %v", ErrLocationInvalid, ns, name, err)
		}
	}
	loc.CACertRef = secretKey(o, "spec", "objectStorage", "caCertRef")
	loc.Credential = secretKey(o, "spec", "credential")
	switch {
	case loc.Provider == "":
		return Location{}, fmt.Errorf("%w: %s/%s names no provider", ErrLocationInvalid, ns, name)
	case loc.Bucket == "":
		return Location{}, fmt.Errorf("%w: %s/%s names no bucket (only object storage locations hold backups)", ErrLocationInvalid, ns, name)
	case strings.Contains(loc.Bucket, "/"):
		return Location{}, fmt.Errorf("%w: %s/%s: bucket %q has a '/' (a prefix goes in spec.objectStorage.prefix)", ErrLocationInvalid, ns, name, loc.Bucket)
	case loc.Phase != "Available":
		why := loc.Message
		if why == "" {
			why = "Velero has not found it Available"
		}
		phase := loc.Phase
		if phase == "" {
			phase = "not validated"
		}
		return Location{}, fmt.Errorf("%w: %s/%s is %s: %s", ErrLocationUnavailable, ns, name, phase, why)
	}
	return loc, nil
}

func secretKey(o *unstructured.Unstructured, fields ...string) *SecretKey {
	m, ok, _ := unstructured.NestedStringMap(o.Object, fields...)
	if !ok || m["name"] == "" {
		return nil
	}
	return &SecretKey{Name: m["name"], Key: m["key"]}
}

// secret reads one key of a Secret in Velero's namespace. Its value is never put in an
// error.
func (v Client) secret(ctx context.Context, k *SecretKey) ([]byte, error) {
	ns := v.namespace()
	s, err := v.Secrets.Secrets(ns).Get(ctx, k.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: Secret %s/%s does not exist", ErrSecretKey, ns, k.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %w", ns, k.Name, err)
	}
	data, ok := s.Data[k.Key]
	if !ok {
		return nil, fmt.Errorf("%w: Secret %s/%s has no key %q (it has %s)", ErrSecretKey, ns, k.Name, k.Key, strings.Join(slices.Sorted(maps.Keys(s.Data)), ", "))
	}
	return data, nil
}
