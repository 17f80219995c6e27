package restore

import (
	"strings"

	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/internal/jsontree"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RestoreStatusAnnotation on an object in the backup says whether its status is
// restored, "true" or "false", whatever Selection.RestoreStatus says: Velero's
// per-object switch. Any other value leaves the selection's say.
const RestoreStatusAnnotation = "velero.io/restore-status"

// StatusSelection names the resources whose status is restored, as Velero's
// restoreStatus: every resource of IncludedResources (empty or "*": every one) but those
// of ExcludedResources, named as the filter's resources are (plural, singular, short
// name or kind, optionally .group).
type StatusSelection struct {
	IncludedResources []string `json:"includedResources,omitempty"`
	ExcludedResources []string `json:"excludedResources,omitempty"`
}

// statusFilter is a StatusSelection resolved; nil restores no status but what the
// annotation asks for.
type statusFilter struct{ f *filter.Filter }

func (s *StatusSelection) resolve(c filter.Catalog) (*statusFilter, error) {
	if s == nil {
		return nil, nil
	}
	f, err := filter.Spec{IncludeResources: s.IncludedResources, ExcludeResources: s.ExcludedResources}.Resolve(c)
	if err != nil {
		return nil, err
	}
	return &statusFilter{f}, nil
}

// keeps reports whether o's status is restored: its annotation in the backup, or else
// the selection.
func (s *statusFilter) keeps(o *Object) bool {
	switch strings.ToLower(strings.TrimSpace(annotation(o.Backup, RestoreStatusAnnotation))) {
	case "true":
		return true
	case "false":
		return false
	}
	return s.selects(o.Item.GroupResource())
}

// selects reports whether the selection restores the status of gr's objects (the
// annotation of one may say otherwise).
func (s *statusFilter) selects(gr schema.GroupResource) bool {
	return s != nil && s.f.Resource(gr)
}

func annotation(u *unstructured.Unstructured, key string) string {
	v, _, _ := unstructured.NestedString(u.Object, "metadata", "annotations", key)
	return v
}

// setAnnotation sets u's annotation key to value in u's own annotations, which it keeps
// (the restore's copy of an object owns its metadata): SetAnnotations would copy them
// twice over, for each object restored. A value that is not a string among them is
// left for the server to refuse, where SetAnnotations would have dropped them all.
func setAnnotation(u *unstructured.Unstructured, made *jsontree.Maps, key, value string) {
	if ann, ok := ownMetadataMap(u, made, "annotations"); ok {
		ann[key] = value
	}
}

// ownMetadataMap returns u's metadata[field] (labels, annotations) to be changed where
// it is, made (made.Map), with the metadata, when absent or null; false when the
// metadata is not an object, which the server refuses.
func ownMetadataMap(u *unstructured.Unstructured, made *jsontree.Maps, field string) (map[string]any, bool) {
	md, ok := u.Object["metadata"].(map[string]any)
	switch {
	case !ok && u.Object["metadata"] != nil:
		return nil, false
	case !ok:
		md = made.Map(1)
		u.Object["metadata"] = md
	}
	m, ok := md[field].(map[string]any)
	if !ok {
		m = made.Map(2)
		md[field] = m
	}
	return m, true
}
