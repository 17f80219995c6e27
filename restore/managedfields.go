package restore

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// stepManagedFields gives an object the restore created the managed fields its backup
// recorded, as Velero's restore does: with a merge patch after the create, for the API
// server keeps none of what a create carries and records the restore as the manager of
// every field. Without them the first server-side apply of a new value by the object's
// own manager (Helm, a GitOps controller, kubectl) fails with a conflict with the
// restore. An owner reference's entry follows the owner to its new UID, or is dropped
// with the reference. A patch that fails is a warning: the object is restored, its
// fields managed by the restore. Selection.Disabled.ManagedFields switches it off.
func (r *run) stepManagedFields(ctx context.Context, o *Object) error {
	// An object adopted or updated holds what the target had, not the backup's.
	if o.Result.Status != Restored || o.Target == nil || r.sel.Disabled.ManagedFields {
		return nil
	}
	recorded := o.recordedManagedFields()
	if len(recorded) == 0 {
		return nil
	}
	fields := r.remapManagedOwners(recorded, o.Target)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"managedFields": fields}})
	if err != nil {
		o.Result.Warnings = append(o.Result.Warnings, "managed fields not restored: "+err.Error())
		return nil
	}
	err = r.retry(ctx, o, func() error {
		patched, err := o.Client.Patch(ctx, o.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			o.Target = patched
		}
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		o.Result.Warnings = append(o.Result.Warnings, "managed fields not restored: "+err.Error())
	}
	return nil
}

// recordedManagedFields returns the managed fields o's backup recorded: those
// StepSanitize took off, or, where it has not run (a caller's pipeline without it, an
// object found through the journal), the backup's object's own.
func (o *Object) recordedManagedFields() []any {
	if o.managedFields != nil {
		return o.managedFields
	}
	md, _ := o.Backup.Object["metadata"].(map[string]any)
	recorded, _ := md["managedFields"].([]any)
	return recorded
}

// managedFieldsDue reports whether an object an earlier run created, found through the
// journal, still lacks the managed fields its backup recorded: that run ended between
// the object's create and StepManagedFields's patch. The backup's object is read to
// know, and the patch is due when the target lacks one of the recorded managers (a
// manager, its operation and its subresource), every one of which the patch would have
// given it. A body that cannot be read leaves the object as the earlier run left it,
// with a warning. The steps from StepManagedFields on are those the journal's object
// runs anyway: its operations, its exec hooks, its readiness.
func (r *run) managedFieldsDue(ctx context.Context, o *Object) bool {
	named := func(name StepName) func(Step) bool { return func(s Step) bool { return s.Name == name } }
	// SkipTo reaches only a step after this one.
	if o.Result.Status != Restored || r.sel.Disabled.ManagedFields ||
		slices.IndexFunc(r.steps, named(StepManagedFields)) <= slices.IndexFunc(r.steps, named(StepJournal)) {
		return false
	}
	if err := r.stepRead(ctx, o); err != nil {
		o.Result.Warnings = append(o.Result.Warnings, "managed fields not checked: "+err.Error())
		return false
	}
	recorded := o.recordedManagedFields()
	type manager struct{ name, operation, subresource string }
	held := map[manager]bool{}
	for _, e := range o.Target.GetManagedFields() {
		held[manager{e.Manager, string(e.Operation), e.Subresource}] = true
	}
	for _, e := range recorded {
		entry, _ := e.(map[string]any)
		name, _ := entry["manager"].(string)
		op, _ := entry["operation"].(string)
		sub, _ := entry["subresource"].(string)
		if !held[manager{name, op, sub}] {
			return true
		}
	}
	return false
}

// remapManagedOwners returns the managed fields recorded, with each owner reference's
// entry (f:metadata, f:ownerReferences, k:{"uid":"..."}) at the UID that owner has in
// the target, and without the entries of references target does not hold. The
// recorded entries are not changed: those that change are copied.
func (r *run) remapManagedOwners(recorded []any, target *unstructured.Unstructured) []any {
	held := map[string]bool{}
	for _, ref := range target.GetOwnerReferences() {
		held[string(ref.UID)] = true
	}
	out := make([]any, len(recorded))
	for i, e := range recorded {
		out[i] = e
		entry, _ := e.(map[string]any)
		fv1, _ := entry["fieldsV1"].(map[string]any)
		md, _ := fv1["f:metadata"].(map[string]any)
		refs, _ := md["f:ownerReferences"].(map[string]any)
		if len(refs) == 0 {
			continue
		}
		remapped := make(map[string]any, len(refs))
		for k, v := range refs {
			var key struct {
				UID string `json:"uid"`
			}
			if j, ok := strings.CutPrefix(k, "k:"); !ok || json.Unmarshal([]byte(j), &key) != nil || key.UID == "" {
				remapped[k] = v // ".", or a key of another shape: as recorded
				continue
			}
			uid := key.UID
			if u, ok := r.newUID(types.UID(uid)); ok {
				uid = string(u)
			}
			if held[uid] {
				k, _ := json.Marshal(map[string]string{"uid": uid})
				remapped["k:"+string(k)] = v
			}
		}
		md = maps.Clone(md)
		if len(held) == 0 {
			delete(md, "f:ownerReferences") // the object has none
		} else {
			md["f:ownerReferences"] = remapped
		}
		fv1 = maps.Clone(fv1)
		fv1["f:metadata"] = md
		entry = maps.Clone(entry)
		entry["fieldsV1"] = fv1
		out[i] = entry
	}
	return out
}
