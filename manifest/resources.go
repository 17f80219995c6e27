package manifest

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// CRDGroupResource is the group-resource of CustomResourceDefinitions themselves.
var CRDGroupResource = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}

// DefinedBy returns the group-resource that the CustomResourceDefinition named name
// defines: a CRD is named <plural>.<group>.
func DefinedBy(name string) (schema.GroupResource, bool) {
	plural, group, ok := strings.Cut(name, ".")
	return schema.GroupResource{Group: group, Resource: plural}, ok && plural != "" && group != ""
}

// CompareVersions orders two version names by Kubernetes priority: negative when a
// ranks below b, positive when above, zero when equal.
// v1 > v1beta2 > v1beta1 > v1alpha1 > "foo".
func CompareVersions(a, b string) int {
	return version.CompareKubeAwareVersionStrings(a, b)
}

// SortVersions orders versions from highest to lowest Kubernetes priority and drops
// duplicates. It sorts in place and returns the shortened slice.
func SortVersions(versions []string) []string {
	slices.SortFunc(versions, func(a, b string) int { return CompareVersions(b, a) })
	return slices.Compact(versions)
}

// CompareGroupResources orders group-resources by group, then resource.
func CompareGroupResources(a, b schema.GroupResource) int {
	if c := strings.Compare(a.Group, b.Group); c != 0 {
		return c
	}
	return strings.Compare(a.Resource, b.Resource)
}

// Resource is what a backup holds of one group-resource: the versions its objects were
// written at, highest Kubernetes priority first, and the one the source cluster
// preferred.
type Resource struct {
	schema.GroupResource
	Versions  []string `json:"versions"`
	Preferred string   `json:"preferred"`
}

// SetVersions records that the backup holds gr at versions, preferred among them. A
// backup that holds objects at more than one version (Velero's EnableAPIGroupVersions)
// says so here; items record only the preferred one. Calling it again for gr replaces
// what was recorded.
func (m *Manifest) SetVersions(gr schema.GroupResource, versions []string, preferred string) {
	vs := SortVersions(slices.Clone(versions))
	if preferred != "" && !slices.Contains(vs, preferred) {
		vs = SortVersions(append(vs, preferred))
	}
	if preferred == "" && len(vs) > 0 {
		preferred = vs[0]
	}
	if m.versions == nil {
		m.versions = map[schema.GroupResource]*Resource{}
	}
	m.versions[gr] = &Resource{GroupResource: gr, Versions: vs, Preferred: preferred}
}

// Resources returns what the backup holds of each group-resource, ordered by group and
// resource: what SetVersions recorded, else the versions of the items themselves (the
// highest one preferred). The slice is new; its Versions are shared.
func (m *Manifest) Resources() []Resource {
	derived := map[schema.GroupResource][]string{}
	derive := func(it *Item) {
		gr := it.GroupResource()
		if _, recorded := m.versions[gr]; recorded {
			return
		}
		if vs := derived[gr]; !slices.Contains(vs, it.Version) {
			derived[gr] = append(vs, it.Version)
		}
	}
	for _, it := range m.items {
		derive(it)
	}
	for _, copies := range m.aliases { // primary or copy, both group-resources are held
		for _, it := range copies {
			derive(it)
		}
	}
	out := make([]Resource, 0, len(derived)+len(m.versions))
	for gr, vs := range derived {
		vs = SortVersions(vs)
		out = append(out, Resource{GroupResource: gr, Versions: vs, Preferred: vs[0]})
	}
	for _, r := range m.versions {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Resource) int { return CompareGroupResources(a.GroupResource, b.GroupResource) })
	return out
}

// Resource returns what the backup holds of gr.
func (m *Manifest) Resource(gr schema.GroupResource) (Resource, bool) {
	if r, ok := m.versions[gr]; ok {
		return *r, true
	}
	for _, r := range m.Resources() {
		if r.GroupResource == gr {
			return r, true
		}
	}
	return Resource{}, false
}
