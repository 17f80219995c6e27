package velero

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// ErrRestoreExists is returned when Velero already has a Restore of the name a restore
// would be recorded under.
var ErrRestoreExists = errors.New("velero has a restore of that name")

// RestoresResource is Velero's Restores, as the dynamic client names them.
var RestoresResource = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "restores"}

// BegunBy is the annotation of a Restore that restoregraph created InProgress for a
// restore it carries out itself (BeginRestore), which RecordRestore finishes.
const BegunBy = "restoregraph.io/begun-by"

// CheckRestoreName returns an error wrapping ErrRestoreExists when Velero has a Restore
// named name: a restore to be recorded under it is refused before it starts. With
// resuming, a Restore that BeginRestore made and that is still InProgress is not
// refused: it is the restore's own, begun by a run that ended before it.
func (v Client) CheckRestoreName(ctx context.Context, name string, resuming bool) error {
	ns := v.namespace()
	o, err := v.Dynamic.Resource(RestoresResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		switch {
		case begun(o) && resuming:
			return nil
		case begun(o):
			return fmt.Errorf("%w: %s/%s, begun by restoregraph and not finished (run it again with its --journal, or velero restore delete it)",
				ErrRestoreExists, ns, name)
		}
		return fmt.Errorf("%w: %s/%s (--restore-name names another)", ErrRestoreExists, ns, name)
	case apierrors.IsNotFound(err):
		return nil
	}
	return fmt.Errorf("restore %s/%s: %w", ns, name, err)
}

// begun says whether o is a Restore BeginRestore made that is not finished.
func begun(o *unstructured.Unstructured) bool {
	phase, _, _ := unstructured.NestedString(o.Object, "status", "phase")
	return o.GetAnnotations()[BegunBy] != "" && phase == string(velerov1.RestorePhaseInProgress)
}

// BeginRestore creates Restore name of backup in Velero's namespace, InProgress since
// started, for a restore restoregraph carries out itself, and returns its UID for the
// restore's request. What plugins make for a restore names its Restore as owner (Velero's
// data movement makes its DataDownloads so), and the garbage collector deletes what
// names an owner that is not there: the Restore must be there, with that UID, while the
// restore runs. Velero's restore controller takes on only New Restores. A Restore of
// the name that BeginRestore made and that is still InProgress is taken on again (a
// restore run again from its journal); any other is ErrRestoreExists. RecordRestore
// finishes it.
func (v Client) BeginRestore(ctx context.Context, name, backup string, spec map[string]any, started time.Time) (types.UID, error) {
	client := v.Dynamic.Resource(RestoresResource).Namespace(v.namespace())
	o := v.restoreObject(name, backup, spec, map[string]any{"phase": string(velerov1.RestorePhaseInProgress),
		"startTimestamp": started.UTC().Truncate(time.Second).Format(time.RFC3339)})
	o.SetAnnotations(map[string]string{BegunBy: "restoregraph"})
	made, err := client.Create(ctx, o, metav1.CreateOptions{})
	if err == nil {
		return made.GetUID(), nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("beginning restore %s: %w", name, err)
	}
	there, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("beginning restore %s: %w", name, err)
	}
	if !begun(there) {
		return "", fmt.Errorf("%w: %s/%s", ErrRestoreExists, v.namespace(), name)
	}
	return there.GetUID(), nil
}

// restoreObject is Restore name of backup in Velero's namespace, with spec (not
// changed: the backup's name is set on a copy) and status.
func (v Client) restoreObject(name, backup string, spec, status map[string]any) *unstructured.Unstructured {
	spec = maps.Clone(spec)
	if spec == nil {
		spec = map[string]any{}
	}
	spec["backupName"] = backup
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": velerov1.SchemeGroupVersion.String(), "kind": "Restore",
		"metadata": map[string]any{"name": name, "namespace": v.namespace()},
		"spec":     spec,
		"status":   status,
	}}
}

// RecordRestore records rec as Velero records its own restores: the results, the
// resource list and the log under restores/NAME/ in store, and then a Restore object in
// Velero's namespace, finished (Velero's restore controller takes on only New ones):
// the one BeginRestore made, when it did, else a new one. `velero restore delete`
// removes both, as for Velero's own.
func (v Client) RecordRestore(ctx context.Context, store *Store, rec RestoreRecord) error {
	if err := store.PutRestoreFiles(ctx, rec); err != nil {
		return err
	}
	st := rec.Status()
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return fmt.Errorf("recording restore %s: %w", rec.Name, err)
	}
	o := v.restoreObject(rec.Name, rec.Backup, rec.Spec, status)
	spec := o.Object["spec"]
	client := v.Dynamic.Resource(RestoresResource).Namespace(v.namespace())
	_, err = client.Create(ctx, o, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("recording restore %s: %w", rec.Name, err)
		}
		return nil
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		there, err := client.Get(ctx, rec.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("recording restore %s: %w", rec.Name, err)
		}
		if !begun(there) {
			return fmt.Errorf("%w: %s/%s", ErrRestoreExists, v.namespace(), rec.Name)
		}
		there.Object["spec"], there.Object["status"] = spec, status
		if _, err := client.Update(ctx, there, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("recording restore %s: %w", rec.Name, err)
		}
		return nil
	})
}

// UpdateRestoreStatus reads Restore name, lets change set fields of its status
// (ChangeRestoreStatus), and writes it back under the resourceVersion it was read at,
// again on a conflict. Velero's Restores have no status subresource: the object is
// updated.
func (v Client) UpdateRestoreStatus(ctx context.Context, name string, change func(*velerov1.RestoreStatus)) error {
	client := v.Dynamic.Resource(RestoresResource).Namespace(v.namespace())
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		o, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := ChangeRestoreStatus(o, change); err != nil {
			return err
		}
		_, err = client.Update(ctx, o, metav1.UpdateOptions{})
		return err
	})
}

// ChangeRestoreStatus reads the status of Restore o with Velero's types, lets change
// set its fields, and puts it back in o. Fields of the status that this Velero's types
// do not know are kept as they are.
func ChangeRestoreStatus(o *unstructured.Unstructured, change func(*velerov1.RestoreStatus)) error {
	cur, _, _ := unstructured.NestedMap(o.Object, "status")
	var status velerov1.RestoreStatus
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(cur, &status); err != nil {
		return fmt.Errorf("restore %s/%s: status: %w", o.GetNamespace(), o.GetName(), err)
	}
	change(&status)
	next, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return err
	}
	for k, val := range cur {
		if !statusFields()[k] {
			next[k] = val
		}
	}
	o.Object["status"] = next
	return nil
}

// statusFields are the JSON names of the fields of velerov1.RestoreStatus.
var statusFields = sync.OnceValue(func() map[string]bool {
	t := reflect.TypeFor[velerov1.RestoreStatus]()
	out := map[string]bool{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out[name] = true
	}
	return out
})
