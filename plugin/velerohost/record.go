package velerohost

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"

	"github.com/restoregraph/restoregraph/manifest"
)

// ErrRestoreExists is returned when Velero already has a Restore of the name a restore
// would be recorded under.
var ErrRestoreExists = errors.New("velero has a restore of that name")

var restoresResource = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "restores"}

// Result is Velero's results.Result: a restore's warnings or errors, by where they
// arose.
type Result struct {
	Velero     []string            `json:"velero,omitempty"`
	Cluster    []string            `json:"cluster,omitempty"`
	Namespaces map[string][]string `json:"namespaces,omitempty"`
}

// Add records msg of an object in namespace ("" for a cluster-scoped one).
func (r *Result) Add(namespace, msg string) {
	if namespace == "" {
		r.Cluster = append(r.Cluster, msg)
		return
	}
	if r.Namespaces == nil {
		r.Namespaces = map[string][]string{}
	}
	r.Namespaces[namespace] = append(r.Namespaces[namespace], msg)
}

// Len is how many messages r holds, as Velero counts them in a Restore's status.
func (r Result) Len() int {
	n := len(r.Velero) + len(r.Cluster)
	for _, m := range r.Namespaces {
		n += len(m)
	}
	return n
}

// The outcomes of an object in a restore's resource list, as Velero names them.
const (
	ItemCreated = "created"
	ItemUpdated = "updated"
	ItemSkipped = "skipped"
	ItemFailed  = "failed"
)

// RestoreRecord is what Velero keeps of a restore: the Restore object, and beside the
// backups in the location, its results, the resources it restored and its log, so that
// `velero restore get|describe --details|logs` show it as one of Velero's own.
type RestoreRecord struct {
	Name, Backup       string
	Started, Completed time.Time
	Warnings, Errors   Result
	// Resources is Velero's resource list: "apps/v1/Deployment" -> "shop/web(created)".
	Resources map[string][]string
	Log       []byte
	// Total is how many objects the restore took on; Restored how many it restored.
	Total, Restored int
	// Spec is what the restore was asked, in the Restore's spec fields
	// (namespaceMapping, includedNamespaces, ...); backupName is set from Backup.
	Spec map[string]any
}

// AddResource lists an object of group, version and kind with its outcome (ItemCreated,
// ...).
func (r *RestoreRecord) AddResource(group, version, kind, namespace, name, outcome string) {
	if r.Resources == nil {
		r.Resources = map[string][]string{}
	}
	key := ResourceListKey(group, version, kind)
	if namespace != "" {
		name = namespace + "/" + name
	}
	r.Resources[key] = append(r.Resources[key], name+"("+outcome+")")
}

// ResourceListKey is how Velero's resource lists name a kind: group/version/Kind, or
// version/Kind in the core group.
func ResourceListKey(group, version, kind string) string {
	return path.Join(schema.GroupVersion{Group: group, Version: version}.String(), kind)
}

// Phase is the phase Velero gives a restore that ended so: PartiallyFailed when any
// object failed, else Completed.
func (r RestoreRecord) Phase() string {
	if r.Errors.Len() > 0 {
		return "PartiallyFailed"
	}
	return "Completed"
}

// RestoreKey is the key of a restore's file in a location: PREFIX/restores/NAME/FILE.
func RestoreKey(prefix, name, file string) string { return path.Join(prefix, "restores", name, file) }

// CheckRestoreName returns an error wrapping ErrRestoreExists when Velero has a Restore
// named name: a restore to be recorded under it is refused before it starts.
func (v Velero) CheckRestoreName(ctx context.Context, name string) error {
	ns := v.namespace()
	_, err := v.Dynamic.Resource(restoresResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return fmt.Errorf("%w: %s/%s (--restore-name names another)", ErrRestoreExists, ns, name)
	case apierrors.IsNotFound(err):
		return nil
	}
	return fmt.Errorf("restore %s/%s: %w", ns, name, err)
}

// RecordRestore records rec as Velero records its own restores: the results, the
// resource list and the log under restores/NAME/ in loc, through store, and then a
// Restore object in Velero's namespace, finished (Velero's restore controller takes on
// only New ones). `velero restore delete` removes both, as for Velero's own.
func (v Velero) RecordRestore(ctx context.Context, store *ObjectStore, loc Location, rec RestoreRecord) error {
	if err := PutRestoreFiles(ctx, store, loc, rec); err != nil {
		return err
	}
	spec := maps.Clone(rec.Spec)
	if spec == nil {
		spec = map[string]any{}
	}
	spec["backupName"] = rec.Backup
	o := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "velero.io/v1", "kind": "Restore",
		"metadata": map[string]any{"name": rec.Name, "namespace": v.namespace()},
		"spec":     spec,
		"status":   rec.Status(),
	}}
	if _, err := v.Dynamic.Resource(restoresResource).Namespace(v.namespace()).Create(ctx, o, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%w: %s/%s", ErrRestoreExists, v.namespace(), rec.Name)
		}
		return fmt.Errorf("recording restore %s: %w", rec.Name, err)
	}
	return nil
}

// UpdateRestoreStatus sets the fields of status on Restore name, over what it has, again
// on a conflict. Velero's Restores have no status subresource: the object is updated.
func (v Velero) UpdateRestoreStatus(ctx context.Context, name string, status map[string]any) error {
	client := v.Dynamic.Resource(restoresResource).Namespace(v.namespace())
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		o, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur, _, _ := unstructured.NestedMap(o.Object, "status")
		if cur == nil {
			cur = map[string]any{}
		}
		maps.Copy(cur, status)
		o.Object["status"] = cur
		_, err = client.Update(ctx, o, metav1.UpdateOptions{})
		return err
	})
}

// Status is the status Velero gives a Restore that ended as rec says.
func (r RestoreRecord) Status() map[string]any {
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	return map[string]any{"phase": r.Phase(), "startTimestamp": ts(r.Started), "completionTimestamp": ts(r.Completed),
		"warnings": int64(r.Warnings.Len()), "errors": int64(r.Errors.Len()),
		"progress": map[string]any{"totalItems": int64(r.Total), "itemsRestored": int64(r.Restored)}}
}

// PutRestoreFiles writes rec's results, resource list and log under restores/NAME/ in
// loc, where Velero keeps its own: with the Restore's status (RestoreRecord.Status),
// what velero restore describe --details and logs read.
func PutRestoreFiles(ctx context.Context, store *ObjectStore, loc Location, rec RestoreRecord) error {
	results, err := gzipJSON(map[string]Result{"warnings": rec.Warnings, "errors": rec.Errors})
	if err != nil {
		return err
	}
	resources, err := gzipJSON(rec.Resources)
	if err != nil {
		return err
	}
	logs, err := gzipBytes(rec.Log)
	if err != nil {
		return err
	}
	for file, data := range map[string][]byte{
		"restore-" + rec.Name + "-results.gz":            results,
		"restore-" + rec.Name + "-resource-list.json.gz": resources,
		"restore-" + rec.Name + "-logs.gz":               logs,
	} {
		if err := store.Put(ctx, RestoreKey(loc.Prefix, rec.Name, file), bytes.NewReader(data)); err != nil {
			return fmt.Errorf("recording restore %s: %w", rec.Name, err)
		}
	}
	return nil
}

// DeleteRestoreFiles removes every file under restores/NAME/ in loc, as Velero's restore
// controller does when its Restore is deleted (velero restore delete). Each file is
// tried; the error joins those that failed.
func DeleteRestoreFiles(ctx context.Context, store *ObjectStore, loc Location, name string) error {
	keys, err := store.List(ctx, RestoreKey(loc.Prefix, name, "")+"/")
	if err != nil {
		return err
	}
	var errs []error
	for _, key := range keys {
		errs = append(errs, store.Delete(ctx, key))
	}
	return errors.Join(errs...)
}

func gzipJSON(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return gzipBytes(data)
}

func gzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// BackupRecord is what Velero keeps beside a backup's tarball, so that its backup sync
// lists the backup and `velero backup describe --details|logs` show it: the Backup
// object (velero-backup.json), the resource list and the log; and the manifest, for
// tools that plan without the tarball.
type BackupRecord struct {
	Name     string
	Manifest *manifest.Manifest
	Object   map[string]any // the Backup, as velero-backup.json
	Log      []byte
}

// File is one file of a record, by its name in the backup's directory.
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
	obj, err := json.Marshal(r.Object)
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
