// Package baseline holds the restore strategies restoregraph is compared with in
// benchmarks and in the demo: Velero's resource order one object at a time, and
// ownerReferences copied verbatim. They are built from the library's own seams (a graph
// Rule, restore Options and Steps), so the product API carries none of them.
package baseline

import (
	"context"
	"slices"
	"strings"

	"github.com/restoregraph/restoregraph/graph"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/restore"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

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

// Velero returns the options changed to restore as Velero does: one object at a time, in
// Velero's resource order, with every ownerReference removed (Velero's resetMetadata
// deletes them with uid and resourceVersion). Nothing the restore makes is collected,
// and nothing it makes is owned: what no controller adopts again stays without its
// owner. The graph still holds its owner edges where the resource order would break
// them (a model of Velero's order, not Velero: TestVeleroSideBySide in test/ measures
// Velero itself).
func Velero(po restore.PlanOptions, ro restore.RunOptions) (restore.PlanOptions, restore.RunOptions) {
	ro.Workers = 1
	ext := &po.Extensions
	ext.Rules = append(slices.Clone(ext.Rules), VeleroOrder)
	ext.Steps = replaceStep(ext.Steps, restore.StepRemapOwners, restore.Step{Name: StepRemoveOwners, Run: removeOwners})
	return po, ro
}

// StepRemoveOwners is the step of the Velero baseline that removes ownerReferences, in
// place of restoregraph's remapping.
const StepRemoveOwners = "remove-owners"

func removeOwners(_ context.Context, o *restore.Object) error {
	o.Body.SetOwnerReferences(nil)
	return nil
}

// replaceStep wraps steps (nil: the default pipeline) so that the step named name is
// replaced by with.
func replaceStep(steps func([]restore.Step) []restore.Step, name restore.StepName, with restore.Step) func([]restore.Step) []restore.Step {
	return func(in []restore.Step) []restore.Step {
		if steps != nil {
			in = steps(in)
		}
		out := slices.Clone(in)
		for i, s := range out {
			if s.Name == name {
				out[i] = with
			}
		}
		return out
	}
}

// CopyOwnerReferences returns ext changed to copy ownerReferences verbatim, as a naive
// copy does (`kubectl create` of saved YAML; not Velero, which removes them): the
// garbage collector then deletes what was restored.
func CopyOwnerReferences(ext restore.Extensions) restore.Extensions {
	ext.Steps = func(steps []restore.Step) []restore.Step {
		return slices.DeleteFunc(steps, func(s restore.Step) bool { return s.Name == restore.StepRemapOwners })
	}
	return ext
}

// VeleroOrder is Velero's default resource priorities as a graph rule: every object of a
// resource type → a barrier → every object of the next type, two edges per object.
var VeleroOrder graph.Rule = veleroOrder{}

type veleroOrder struct{}

func (veleroOrder) Name() string { return "velero-order" }

func (veleroOrder) AddEdges(b *graph.RuleBuilder) {
	items := b.Items()
	byGR := map[schema.GroupResource][]int{}
	for i, it := range items {
		byGR[it.GroupResource()] = append(byGR[it.GroupResource()], i)
	}
	var prev []int
	for _, gr := range order(items) {
		cur := byGR[gr]
		if prev != nil {
			barrier := b.Barrier("after " + items[prev[0]].GroupResource().String())
			for _, p := range prev {
				b.Edge(p, barrier)
			}
			for _, c := range cur {
				b.Edge(barrier, c)
			}
		}
		prev = cur
	}
}

// Order returns the resource types of m in Velero's default restore order.
func Order(m *manifest.Manifest) []schema.GroupResource { return order(m.Items()) }

func order(items []*manifest.Item) []schema.GroupResource {
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
