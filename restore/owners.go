package restore

import (
	"context"
	"errors"
	"fmt"

	"github.com/restoregraph/restoregraph/internal/jsontree"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// remapOwners points obj's ownerReferences at UIDs that exist in the target: the new
// UID of an owner restored in this run, else the UID of the owner found in the target
// by kind, namespace and name; an owner found nowhere is dropped with a warning.
func (r *run) remapOwners(ctx context.Context, o *Object) {
	obj, res := o.Body, o.Result
	refs := obj.GetOwnerReferences()
	if len(refs) == 0 {
		return
	}
	kept := refs[:0]
	for _, ref := range refs {
		if uid, ok := r.ownerUID(o, ref.UID); ok {
			relabelOwnerUID(obj, ref.UID, uid)
			ref.UID = uid
			kept = append(kept, ref)
			continue
		}
		uid, err := r.lookupOwner(ctx, ref, o)
		if err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("owner %s %s (uid %s) dropped: %v", ref.Kind, ref.Name, ref.UID, err))
			continue
		}
		ref.UID = uid
		kept = append(kept, ref)
	}
	if len(kept) == 0 {
		kept = nil
	}
	setOwnerReferences(obj, o.decoded, kept)
}

// setOwnerReferences is obj.SetOwnerReferences(refs) (nil removes the field), its maps
// made by made.Map, without the reflection of runtime.DefaultUnstructuredConverter,
// which it spends on every reference of every object restored.
func setOwnerReferences(obj *unstructured.Unstructured, made *jsontree.Maps, refs []metav1.OwnerReference) {
	if refs == nil {
		unstructured.RemoveNestedField(obj.Object, "metadata", "ownerReferences")
		return
	}
	out := make([]any, len(refs))
	for i, ref := range refs {
		m := made.Map(6)
		m["apiVersion"], m["kind"], m["name"], m["uid"] = ref.APIVersion, ref.Kind, ref.Name, string(ref.UID)
		if ref.Controller != nil {
			m["controller"] = *ref.Controller
		}
		if ref.BlockOwnerDeletion != nil {
			m["blockOwnerDeletion"] = *ref.BlockOwnerDeletion
		}
		out[i] = m
	}
	if md, ok := obj.Object["metadata"].(map[string]any); ok { // as remapOwners found it
		md["ownerReferences"] = out
	}
}

// relabelOwnerUID points the labels that hold an owner's UID at its new one. A Job
// selects its Pods by its own UID (batch.kubernetes.io/controller-uid, controller-uid):
// a Pod restored with the old value is released by the restored Job, which removes the
// ownerReference that the restore made, and ownership is lost.
func relabelOwnerUID(obj *unstructured.Unstructured, old, uid types.UID) {
	// The body's own labels (stepRead copied its metadata), changed where they are.
	labels, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "labels")
	m, _ := labels.(map[string]any)
	for k, v := range m {
		if v == string(old) {
			m[k] = string(uid)
		}
	}
}

// lookupOwner finds an owner that is not in the backup in the target.
func (r *run) lookupOwner(ctx context.Context, ref metav1.OwnerReference, o *Object) (types.UID, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", err
	}
	if r.target.Mapper == nil {
		return "", errors.New("not in the backup, and the target has no RESTMapper to look for it")
	}
	mapping, err := r.target.Mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, gv.Version)
	if err != nil {
		return "", fmt.Errorf("neither in the backup nor served by the target: %w", err)
	}
	client := r.target.Dynamic.Resource(mapping.Resource)
	var owner *unstructured.Unstructured
	err = r.retry(ctx, o, func() (err error) {
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			owner, err = client.Namespace(o.Body.GetNamespace()).Get(ctx, ref.Name, metav1.GetOptions{})
		} else {
			owner, err = client.Get(ctx, ref.Name, metav1.GetOptions{})
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("neither in the backup nor in the target: %w", err)
	}
	return owner.GetUID(), nil
}
