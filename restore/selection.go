package restore

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/internal/discoverctx"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/versionselect"
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
	o.once.Do(func() { o.groups, o.lists, o.err = discoverctx.ServerGroupsAndResources(ctx, o.d) })
	return o.groups, o.lists, o.err
}

func (o *onceDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	return o.ServerGroupsAndResourcesWithContext(context.Background())
}

// catalog is every resource name the backup and the target answer to: the backup's
// group-resources and kinds, its CRDs' names, and the target's discovery.
func catalog(ctx context.Context, backup Backup, disc versionselect.Discovery) filter.Catalog {
	_, lists, _ := discoverctx.ServerGroupsAndResources(ctx, disc) // a failed discovery was reported by the plan
	c := filter.FromDiscovery(lists)
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
