package manifest

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Mapper maps a kind to its resource. meta.RESTMapper (and so client-go's discovery
// RESTMapper) satisfies it.
type Mapper interface {
	RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error)
}

// Builder builds a manifest from the objects a backup tool has in hand while it backs
// them up.
type Builder struct {
	mapper   Mapper
	manifest *Manifest
}

// NewBuilder returns a builder that resolves resources through mapper.
func NewBuilder(mapper Mapper) *Builder {
	return &Builder{mapper: mapper, manifest: New(0)}
}

// Add records obj. It fails when the kind cannot be mapped to a resource, when the
// object's scope disagrees with the mapping, or as Manifest.Add fails.
func (b *Builder) Add(obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	mapping, err := b.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("manifest: map %s %s/%s: %w", gvk, obj.GetNamespace(), obj.GetName(), err)
	}
	item := FromObject(obj, mapping.Resource.Resource)
	if mapping.Scope != nil && mapping.Scope.Name() == meta.RESTScopeNameRoot && item.Namespace != "" {
		return &InvalidItemError{Item: item.String(), Field: "namespace", Reason: "is set on a cluster-scoped kind"}
	}
	_, err = b.manifest.Add(item)
	return err
}

// Manifest returns the manifest built so far.
func (b *Builder) Manifest() *Manifest { return b.manifest }

// FromObject returns the item that records obj, whose resource (plural) is resource.
func FromObject(obj *unstructured.Unstructured, resource string) *Item {
	gvk := obj.GroupVersionKind()
	refs := obj.GetOwnerReferences()
	var owners []types.UID
	if len(refs) > 0 {
		owners = make([]types.UID, len(refs))
		for i, r := range refs {
			owners[i] = r.UID
		}
	}
	return &Item{
		Type:        &Type{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Resource: resource},
		Namespace:   obj.GetNamespace(),
		Name:        obj.GetName(),
		UID:         obj.GetUID(),
		Labels:      PairsFromMap(obj.GetLabels()),
		Annotations: PairsFromMap(obj.GetAnnotations()),
		OwnerUIDs:   owners,
	}
}
