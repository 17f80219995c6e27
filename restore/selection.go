package restore

import (
	"context"
	"sync"

	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/versionselect"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Filtered names the plan's rule for objects the Options' filter leaves out.
const Filtered = "filter"

// onceDiscovery asks the target's discovery once per plan: version selection and the
// resolution of resource names read the same answer.
type onceDiscovery struct {
	d      versionselect.Discovery
	once   sync.Once
	groups []*metav1.APIGroup
	lists  []*metav1.APIResourceList
	err    error
}

func (o *onceDiscovery) ServerGroupsAndResourcesWithContext(ctx context.Context) ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	o.once.Do(func() { o.groups, o.lists, o.err = o.d.ServerGroupsAndResourcesWithContext(ctx) })
	return o.groups, o.lists, o.err
}

// catalog is every resource name the backup and the target answer to: the backup's
// group-resources and kinds, its CRDs' names, and the target's discovery.
func catalog(ctx context.Context, backup Backup, disc versionselect.Discovery) filter.Catalog {
	var c filter.Catalog
	_, lists, _ := disc.ServerGroupsAndResourcesWithContext(ctx) // a failed discovery was reported by the plan
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			c = append(c, filter.Names{GroupResource: gv.WithResource(r.Name).GroupResource(), Kind: r.Kind,
				Singular: r.SingularName, ShortNames: r.ShortNames})
		}
	}
	m := backup.Manifest()
	kinds := map[schema.GroupResource]string{}
	note := func(it *manifest.Item) {
		if _, ok := kinds[it.GroupResource()]; !ok {
			kinds[it.GroupResource()] = it.Kind
		}
	}
	for _, it := range m.Items() {
		note(it)
	}
	for _, copies := range m.Folded() {
		for _, it := range copies {
			note(it)
		}
	}
	for gr, kind := range kinds {
		c = append(c, filter.Names{GroupResource: gr, Kind: kind})
	}
	if crds, _, err := versionselect.BackupCRDs(backup); err == nil {
		for _, crd := range crds {
			n := crd.Spec.Names
			c = append(c, filter.Names{GroupResource: versionselect.CRDGroupResource(crd), Kind: n.Kind, Singular: n.Singular, ShortNames: n.ShortNames})
		}
	}
	return c
}

// filtered returns the objects the filter leaves out, and why. A Namespace is restored
// when anything restored lives in it, whatever the resource filters and the selector
// say, so that what is restored has somewhere to go; a CRD, with cluster-scoped
// resources decided automatically, when any of its custom resources is restored.
func filtered(m *manifest.Manifest, f *filter.Filter) map[*manifest.Item]exclusion {
	out := map[*manifest.Item]exclusion{}
	usedNamespaces := map[string]bool{}
	usedResources := map[schema.GroupResource]bool{}
	items := m.Items()
	for _, it := range items {
		if it.GroupResource() == manifest.CRDGroupResource || it.GroupResource() == (schema.GroupResource{Resource: "namespaces"}) {
			continue
		}
		if reason := f.Exclusion(it, nil); reason != "" {
			out[it] = exclusion{Filtered, reason}
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
			out[it] = exclusion{Filtered, reason}
		}
	}
	return out
}
