package graph

import (
	"slices"
	"strings"

	"github.com/restoregraph/restoregraph/manifest"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	capiGroup          = "cluster.x-k8s.io"
	capiClusterNameKey = "cluster.x-k8s.io/cluster-name"
)

func (b *builder) clusterAPIEdges() {
	clusters := map[[2]string]int32{} // namespace, name
	for i, it := range b.items {
		if it.Group == capiGroup && it.Resource == "clusters" {
			clusters[[2]string{it.Namespace, it.Name}] = int32(i)
		}
	}
	if len(clusters) == 0 {
		return
	}
	for i, it := range b.items {
		name, ok := it.Labels.Lookup(capiClusterNameKey)
		if !ok && it.Group == "addons."+capiGroup && it.Resource == "clusterresourcesetbindings" {
			name, ok = it.Name, true // a binding is named after its Cluster
		}
		if !ok {
			continue
		}
		if c, found := clusters[[2]string{it.Namespace, name}]; found {
			b.g.ruleEdge(c, int32(i), EdgeClusterAPI)
		}
	}
}

// veleroHigh and veleroLow are Velero's default restore priorities: the resources
// restored first, in order, and those restored last. Everything else comes between, in
// alphabetical order of resource.group.
var (
	veleroHigh = []string{
		"customresourcedefinitions.apiextensions.k8s.io", "namespaces", "storageclasses.storage.k8s.io",
		"volumesnapshotclasses.snapshot.storage.k8s.io", "volumesnapshotcontents.snapshot.storage.k8s.io",
		"volumesnapshots.snapshot.storage.k8s.io", "datauploads.velero.io", "persistentvolumes",
		"persistentvolumeclaims", "serviceaccounts", "secrets", "configmaps", "limitranges", "pods",
		"replicasets.apps", "clusterclasses.cluster.x-k8s.io", "endpoints", "services",
	}
	veleroLow = []string{
		"clusterbootstraps.run.tanzu.vmware.com", "clusters.cluster.x-k8s.io", "clusterresourcesets.addons.cluster.x-k8s.io",
	}
)

// VeleroOrder returns the resource types of m in Velero's default restore order.
func VeleroOrder(m *manifest.Manifest) []schema.GroupResource { return veleroOrder(m.Items()) }

func veleroOrder(items []*manifest.Item) []schema.GroupResource {
	present := map[string]schema.GroupResource{}
	for _, it := range items {
		gr := it.GroupResource()
		present[gr.String()] = gr
	}
	rank := func(s string) (int, string) {
		if i := slices.Index(veleroHigh, s); i >= 0 {
			return i, ""
		}
		if i := slices.Index(veleroLow, s); i >= 0 {
			return len(veleroHigh) + 1 + i, ""
		}
		return len(veleroHigh), s
	}
	names := make([]string, 0, len(present))
	for s := range present {
		names = append(names, s)
	}
	slices.SortFunc(names, func(a, b string) int {
		ra, sa := rank(a)
		rb, sb := rank(b)
		if ra != rb {
			return ra - rb
		}
		return strings.Compare(sa, sb)
	})
	out := make([]schema.GroupResource, len(names))
	for i, s := range names {
		out[i] = present[s]
	}
	return out
}

// veleroOrderEdges chains the resource types through one barrier node per boundary:
// every object of a type → barrier → every object of the next type. That is two edges
// per object instead of one per pair of objects.
func (b *builder) veleroOrderEdges() {
	byGR := map[schema.GroupResource][]int32{}
	for i, it := range b.items {
		byGR[it.GroupResource()] = append(byGR[it.GroupResource()], int32(i))
	}
	var prev []int32
	for _, gr := range veleroOrder(b.items) {
		cur := byGR[gr]
		if prev != nil {
			barrier := b.g.addNode("after " + b.items[prev[0]].GroupResource().String())
			for _, p := range prev {
				b.g.ruleEdge(p, barrier, EdgeVeleroOrder)
			}
			for _, c := range cur {
				b.g.ruleEdge(barrier, c, EdgeVeleroOrder)
			}
		}
		prev = cur
	}
}
