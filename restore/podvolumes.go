package restore

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/restoregraph/restoregraph/graph"
	"github.com/restoregraph/restoregraph/manifest"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
)

// PodVolumeRestorer fills the volumes of restored Pods from a file-system backup of
// them (VolumeFileSystem), as Velero's node-agent fills them from the PodVolumeRestores
// its restore makes. Package velero makes one from a backup's PodVolumeBackups.
type PodVolumeRestorer interface {
	// Volumes names the volumes of the backup's Pod namespace/name whose files the
	// backup holds; none when it holds none.
	Volumes(namespace, name string) []string
	// RestorePodVolumes fills those volumes of pod, the Pod as the restore made it in
	// the target (its name, namespace and UID), sourceNamespace being its namespace in
	// the backup and restore the restore as plugins are told of it. It returns once each
	// volume is filled; an error names each one that is not. Called again for the same
	// Pod and restore (a run again from the journal), it follows what it started then
	// rather than start it again.
	RestorePodVolumes(ctx context.Context, pod *unstructured.Unstructured, sourceNamespace string, restore *ria.Restore) error
}

// PodVolumeAction is Velero's action that puts the restore-wait init container into a
// Pod whose volumes a PodVolumeRestorer fills, so that its containers start on the
// files the backup holds.
const PodVolumeAction = "velero.io/pod-volume-restore"

// filledPods returns, by the Pod's item, the volumes that pv fills of each Pod the
// restore makes (excluded is what the plan leaves out).
func filledPods(m *manifest.Manifest, pv PodVolumeRestorer, excluded map[*manifest.Item]exclusion) map[*manifest.Item][]string {
	if pv == nil {
		return nil
	}
	out := map[*manifest.Item][]string{}
	for _, it := range m.Items() {
		if it.GroupResource() != podsResource {
			continue
		}
		if _, out := excluded[it]; out {
			continue
		}
		if vols := pv.Volumes(it.Namespace, it.Name); len(vols) > 0 {
			out[it] = vols
		}
	}
	return out
}

// podVolumesFirst is the plan rule that restores each Pod whose volumes are filled
// (volumePlan.filled) before its owners and theirs, which make no edge to it
// (graph.Options.Detach):
// the Pod is created without its owner references, with the init container Velero's
// action gives it, and its controller, restored after it, adopts it, as it adopts the
// Pods Velero restores before their controllers. Were the controller first, it would
// make a Pod of its own, empty, before the restore made the one it fills.
type podVolumesFirst map[*manifest.Item][]string

func (podVolumesFirst) Name() string { return "pod-volumes-first" }

func (r podVolumesFirst) detached(it *manifest.Item) bool {
	_, ok := r[it]
	return ok
}

func (r podVolumesFirst) AddEdges(b *graph.RuleBuilder) {
	items := b.Items()
	byUID := make(map[types.UID]int, len(items))
	for i, it := range items {
		byUID[it.UID] = i
	}
	for i, it := range items {
		if _, ok := r[it]; !ok {
			continue
		}
		// Its owners' owners too: a Deployment restored before the Pod would make a
		// ReplicaSet, and it a Pod, of its own.
		seen := map[int]bool{}
		for next := it.OwnerUIDs; len(next) > 0; {
			var up []types.UID
			for _, uid := range next {
				if o, ok := byUID[uid]; ok && !seen[o] {
					seen[o] = true
					b.Edge(i, o)
					up = append(up, items[o].OwnerUIDs...)
				}
			}
			next = up
		}
	}
}

// stepPodVolumes fills the volumes of a Pod the restore created whose files the backup
// holds, through Extensions.PodVolumes, within RunOptions.ItemOperationTimeout; the Pod
// is done once they are filled. A Pod that existed already is left as it is, as Velero
// leaves it; one an earlier run restored (the journal's) has what it started followed.
func (r *run) stepPodVolumes(ctx context.Context, o *Object) error {
	vols := r.plan.volumes.filled[o.Item]
	if len(vols) == 0 || o.DryRun || o.Result.Status != Restored || o.Target == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.ItemOperationTimeout)
	defer cancel()
	r.log.InfoContext(ctx, "filling pod volumes", "object", o.Item.String(), "volumes", vols)
	if err := r.plan.ext.PodVolumes.RestorePodVolumes(ctx, o.Target, o.Item.Namespace, r.request); err != nil {
		return fmt.Errorf("pod volumes %v: %w", vols, err)
	}
	return nil
}

var jobsResource = schema.GroupResource{Group: "batch", Resource: "jobs"}

// controllerUIDLabels are the labels a Job's generated selector selects its Pods by:
// the Job's UID.
var controllerUIDLabels = []string{"controller-uid", "batch.kubernetes.io/controller-uid"}

// keepJobSelector gives a Job that owns a Pod restored before it (podVolumesFirst) the
// selector it had in the backup, as a manual one, and the labels its template selected
// Pods by. Its action (Velero's, as the built-in one) takes them off so that the API
// server generates a selector of the restored Job's own UID, which the Pod, made before
// the Job with the labels of the Job's UID in the backup, does not match: the Job would
// not adopt it, and would start a Pod of its own beside it.
func (r *run) keepJobSelector(o *Object) error {
	it := o.Item
	if it.GroupResource() != jobsResource || !r.plan.volumes.adopters[it.UID] {
		return nil
	}
	data, err := r.backup.Body(it.GroupResource(), o.Resource.Version, it.Namespace, it.Name)
	if err != nil {
		return err
	}
	var backed unstructured.Unstructured
	if err := backed.UnmarshalJSON(data); err != nil {
		return fmt.Errorf("%s at %s in the backup: %w", it, o.Resource.Version, err)
	}
	selector, found, _ := unstructured.NestedMap(backed.Object, "spec", "selector")
	if !found {
		return nil
	}
	o.own()
	set := func(v any, path ...string) error {
		if err := unstructured.SetNestedField(o.Body.Object, v, path...); err != nil {
			return fmt.Errorf("keeping the selector of %s, which adopts the Pods restored before it: %w", it, err)
		}
		return nil
	}
	if err := set(selector, "spec", "selector"); err != nil {
		return err
	}
	if err := set(true, "spec", "manualSelector"); err != nil {
		return err
	}
	for _, l := range controllerUIDLabels {
		if v, ok, _ := unstructured.NestedString(backed.Object, "spec", "template", "metadata", "labels", l); ok {
			if err := set(v, "spec", "template", "metadata", "labels", l); err != nil {
				return err
			}
		}
	}
	return nil
}
