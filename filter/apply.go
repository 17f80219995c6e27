package filter

import (
	"github.com/restoregraph/restoregraph/manifest"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Apply returns the objects of m the filter leaves out, and why. A Namespace is taken
// when anything taken lives in it, whatever the resource filters and the selector say,
// so that what is restored has somewhere to go; a CRD, with cluster-scoped resources
// decided automatically, when any of its custom resources is taken. Restores and
// backups select alike through it.
func (f *Filter) Apply(m *manifest.Manifest) map[*manifest.Item]string {
	out := map[*manifest.Item]string{}
	usedNamespaces := map[string]bool{}
	usedResources := map[schema.GroupResource]bool{}
	items := m.Items()
	for _, it := range items {
		if it.GroupResource() == manifest.CRDGroupResource || it.GroupResource() == (schema.GroupResource{Resource: "namespaces"}) {
			continue
		}
		if reason := f.Exclusion(it, nil); reason != "" {
			out[it] = reason
			continue
		}
		usedNamespaces[it.Namespace] = true
		usedResources[it.GroupResource()] = true
	}
	for _, it := range items {
		gr := it.GroupResource()
		var needed bool
		switch gr {
		case schema.GroupResource{Resource: "namespaces"}:
			needed = usedNamespaces[it.Name] && f.Namespace(it.Name)
		case manifest.CRDGroupResource:
			defines, _ := manifest.DefinedBy(it.Name)
			off := f.ClusterResources()
			needed = usedResources[defines] && (off == nil || *off)
		default:
			continue
		}
		if needed && !f.ResourceExcluded(gr) {
			continue
		}
		if reason := f.Exclusion(it, nil); reason != "" {
			out[it] = reason
		}
	}
	return out
}
