package velero

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/restoregraph/restoregraph/restore"
)

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
	// Log is the restore's log as `velero restore logs` prints it: a structured line per
	// object (RecordOf writes it with restore.Report.LogTo).
	Log []byte
	// Total is how many objects the restore took on; Restored how many it restored.
	Total, Restored int
	// Spec is what the restore was asked, in the Restore's spec fields
	// (namespaceMapping, includedNamespaces, ...); backupName is set from Backup.
	Spec map[string]any
}

// RecordOf is what Velero would keep of rep, restore name of backup: each object the
// restore took on in the resource list with its outcome (created, updated, skipped
// when it existed, failed), failures and what they blocked as errors, warnings as
// warnings, by the namespace the object was restored into, and the log, a line per
// object. What the plan left out is not listed, as Velero lists only what it took on;
// the log says why it was left out.
func RecordOf(name, backup string, rep *restore.Report) RestoreRecord {
	rec := RestoreRecord{Name: name, Backup: backup, Started: rep.Started, Completed: rep.Finished}
	for o := range rep.Objects() {
		if o.Status == restore.Skipped && (o.SkippedBy == restore.NonRestorable || o.SkippedBy == restore.ControllerManaged || o.SkippedBy == restore.Filtered) {
			continue
		}
		ns, nm := o.Namespace, o.Name
		if o.TargetNamespace != "" {
			ns = o.TargetNamespace
		}
		if o.TargetName != "" {
			nm = o.TargetName
		}
		what := schema.GroupResource{Group: o.Group, Resource: o.Resource}.String() + " " + path.Join(ns, nm)
		outcome, there := ItemFailed, true
		switch o.Status {
		case restore.Restored:
			outcome = ItemCreated
		case restore.Updated:
			outcome = ItemUpdated
		case restore.Adopted:
			outcome = ItemSkipped // there already, left as it was
		case restore.Skipped:
			outcome, there = ItemSkipped, false
			if o.SkippedBy == "" { // not a plugin's choice: what it needed failed
				rec.Errors.Add(ns, fmt.Sprintf("not restoring %s: %s", what, o.Reason))
			}
		default:
			there = false
			rec.Errors.Add(ns, fmt.Sprintf("error restoring %s: %s", what, o.Reason))
		}
		rec.Total++
		if there {
			rec.Restored++
		}
		rec.AddResource(o.Group, o.Version, o.Kind, ns, nm, outcome)
		for _, w := range o.Warnings {
			rec.Warnings.Add(ns, what+": "+w)
		}
	}
	rec.Warnings.Velero = rep.Warnings
	var log bytes.Buffer
	h := slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}).WithAttrs([]slog.Attr{slog.String("restore", name)})
	_ = rep.LogTo(context.Background(), h) // a bytes.Buffer does not fail
	rec.Log = log.Bytes()
	return rec
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
func (r RestoreRecord) Phase() velerov1.RestorePhase {
	if r.Errors.Len() > 0 {
		return velerov1.RestorePhasePartiallyFailed
	}
	return velerov1.RestorePhaseCompleted
}

// Status is the status Velero gives a Restore that ended as rec says.
func (r RestoreRecord) Status() velerov1.RestoreStatus {
	started, completed := metav1.NewTime(r.Started.UTC().Truncate(time.Second)), metav1.NewTime(r.Completed.UTC().Truncate(time.Second))
	return velerov1.RestoreStatus{Phase: r.Phase(), StartTimestamp: &started, CompletionTimestamp: &completed,
		Warnings: r.Warnings.Len(), Errors: r.Errors.Len(),
		Progress: &velerov1.RestoreProgress{TotalItems: r.Total, ItemsRestored: r.Restored}}
}

// Files returns the files Velero keeps of the restore beside its backups, by their
// names under restores/NAME/: its results, its resource list and its log.
func (r RestoreRecord) Files() ([]File, error) {
	results, err := gzipJSON(map[string]Result{"warnings": r.Warnings, "errors": r.Errors})
	if err != nil {
		return nil, err
	}
	resources, err := gzipJSON(r.Resources)
	if err != nil {
		return nil, err
	}
	logs, err := gzipBytes(r.Log)
	if err != nil {
		return nil, err
	}
	return []File{
		{"restore-" + r.Name + "-results.gz", results},
		{"restore-" + r.Name + "-resource-list.json.gz", resources},
		{"restore-" + r.Name + "-logs.gz", logs},
	}, nil
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
