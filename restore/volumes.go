package restore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/restoregraph/restoregraph/graph"
	"github.com/restoregraph/restoregraph/manifest"
)

// VolumeMethod is how a PersistentVolume's data was backed up, and so how it comes
// back, as Velero decides from the backup's volume information.
type VolumeMethod string

// The ways a volume's data comes back. A volume whose data was not backed up comes
// back as VolumeProvisioned or VolumeAsIs, by its reclaim policy.
const (
	// VolumeNativeSnapshot: the provider's snapshot is made a volume again by its
	// VolumeSnapshotter (Extensions.VolumeSnapshotters), and the PersistentVolume is
	// restored pointing at it.
	VolumeNativeSnapshot VolumeMethod = "native snapshot"
	// VolumeCSISnapshot: the PersistentVolume is left out, and its claim provisioned
	// again from the CSI VolumeSnapshot (its dataSource), which Velero's CSI restore
	// actions restore.
	VolumeCSISnapshot VolumeMethod = "csi snapshot"
	// VolumeDataMovement: the PersistentVolume is left out, and its claim provisioned
	// again and filled by a DataDownload from the backup's store (Velero's CSI claim
	// action starts it, an asynchronous operation).
	VolumeDataMovement VolumeMethod = "data movement"
	// VolumeFileSystem: the PersistentVolume is left out, its claim provisioned again,
	// and the volume of the Pod that mounts it filled by a PodVolumeRestore.
	VolumeFileSystem VolumeMethod = "file system"
	// VolumeProvisioned: no data was backed up and the volume's reclaim policy is
	// Delete: the PersistentVolume is left out, and its claim provisioned again, empty.
	VolumeProvisioned VolumeMethod = "provisioned again"
	// VolumeAsIs: no data was backed up and the reclaim policy keeps the volume: the
	// PersistentVolume is restored as it was, its binding reset, and binds its claim.
	VolumeAsIs VolumeMethod = "restored as is"
)

// Volume is what a backup's records say of one PersistentVolume's data (Velero's
// volume information): how it was backed up, and for a native snapshot, which.
type Volume struct {
	// PV is the PersistentVolume's name in the backup.
	PV string `json:"pv"`
	// ClaimNamespace and Claim name the claim it was bound to.
	ClaimNamespace string `json:"claimNamespace,omitempty"`
	Claim          string `json:"claim,omitempty"`
	// Method is how its data was backed up: VolumeNativeSnapshot, VolumeCSISnapshot,
	// VolumeDataMovement or VolumeFileSystem; "" when it was not.
	Method VolumeMethod `json:"method,omitempty"`
	// Snapshot is the native snapshot, for VolumeNativeSnapshot.
	Snapshot *NativeSnapshot `json:"snapshot,omitempty"`
}

// NativeSnapshot is a provider's snapshot of a volume, as a VolumeSnapshotter made it.
type NativeSnapshot struct {
	// Location is the VolumeSnapshotLocation it was made through, the key of
	// Extensions.VolumeSnapshotters; Provider that location's provider.
	Location string `json:"location"`
	Provider string `json:"provider,omitempty"`
	// ID is the provider's snapshot ID; VolumeType, AZ and IOPS the volume's, as the
	// provider reported them.
	ID         string `json:"id"`
	VolumeType string `json:"volumeType,omitempty"`
	AZ         string `json:"availabilityZone,omitempty"`
	IOPS       *int64 `json:"iops,omitempty"`
}

// VolumeSnapshotter makes volumes from a provider's snapshots, as Velero's
// VolumeSnapshotter plugins do (package velero/pluginhost runs them), configured for one
// VolumeSnapshotLocation.
type VolumeSnapshotter interface {
	// CreateVolumeFromSnapshot makes a volume of snapshot and returns its ID.
	CreateVolumeFromSnapshot(ctx context.Context, snapshot NativeSnapshot) (volumeID string, err error)
	// SetVolumeID points the PersistentVolume pv at the volume volumeID.
	SetVolumeID(ctx context.Context, pv *unstructured.Unstructured, volumeID string) (*unstructured.Unstructured, error)
}

// UnavailableSnapshotter stands, in Extensions.VolumeSnapshotters, for a
// VolumeSnapshotLocation whose VolumeSnapshotter could not be had (the location does not
// exist, no plugin serves its provider): the plan refuses each volume it would make of
// the location's snapshots, with Err as the reason (VolumeError.Err), before anything
// is written. It is given by value.
type UnavailableSnapshotter struct{ Err error }

func (u UnavailableSnapshotter) CreateVolumeFromSnapshot(context.Context, NativeSnapshot) (string, error) {
	return "", u.Err
}

func (u UnavailableSnapshotter) SetVolumeID(context.Context, *unstructured.Unstructured, string) (*unstructured.Unstructured, error) {
	return nil, u.Err
}

// Volumes names the plan rule that leaves out the PersistentVolumes whose claims are
// provisioned again (ObjectResult.SkippedBy).
const Volumes = "restoregraph.dev/volumes"

// VolumeError is a volume the plan cannot restore as its records say, and why.
type VolumeError struct {
	// PV is the PersistentVolume's name; Claim is "namespace/name" of the claim, or Pod
	// the Pod's, instead where what is wrong is the claim's or the Pod's.
	PV     string
	Claim  string
	Pod    string
	Method VolumeMethod
	Reason string
	// Err is the error Reason tells of, when there is one (an UnavailableSnapshotter's).
	Err error
}

func (e *VolumeError) Unwrap() error { return e.Err }

func (e *VolumeError) Error() string {
	switch {
	case e.Pod != "":
		return fmt.Sprintf("pod %s (%s): %s", e.Pod, e.Method, e.Reason)
	case e.PV == "":
		return fmt.Sprintf("persistentvolumeclaim %s (%s): %s", e.Claim, e.Method, e.Reason)
	}
	return fmt.Sprintf("persistentvolume %s (%s): %s", e.PV, e.Method, e.Reason)
}

var (
	persistentVolumes      = schema.GroupResource{Resource: "persistentvolumes"}
	persistentVolumeClaims = schema.GroupResource{Resource: "persistentvolumeclaims"}
	storageClassesResource = schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"}
)

// volumePlan is what the plan decided for the backup's PersistentVolumes and claims.
type volumePlan struct {
	// method is each PersistentVolume's, by its item.
	method map[*manifest.Item]VolumeMethod
	// snapshot is the native snapshot to make a volume of, by the PV's item; none when
	// Selection.RestorePVs is false.
	snapshot map[*manifest.Item]*NativeSnapshot
	// claimMethod is the method of the volume each claim was bound to, by the claim's
	// namespace and name in the backup.
	claimMethod map[manifest.ID]VolumeMethod
	// takenOn is the PersistentVolumes the restore makes, or whose claims it makes.
	takenOn map[*manifest.Item]bool
	// filled is the volumes Extensions.PodVolumes fills, by the Pod's item.
	filled map[*manifest.Item][]string
	// adopters is the UIDs of the owners of the Pods of filled, which adopt them.
	adopters map[types.UID]bool
}

// planVolumes decides, as Velero decides, how each PersistentVolume of the backup comes
// back: its method from vols, or else by its reclaim policy. It returns what it
// decided, the PersistentVolumes to leave out (provisioned again) and the volumes the
// restore takes on (excluded is what the plan leaves out already: a volume whose
// PersistentVolume and claim are both left out is not) that cannot be restored as their
// records say, each a *VolumeError.
func planVolumes(backup Backup, sel Selection, vols []Volume, ext Extensions, excluded map[*manifest.Item]exclusion) (volumePlan, map[*manifest.Item]exclusion, error) {
	vp := volumePlan{method: map[*manifest.Item]VolumeMethod{}, snapshot: map[*manifest.Item]*NativeSnapshot{},
		claimMethod: map[manifest.ID]VolumeMethod{}, takenOn: map[*manifest.Item]bool{}}
	m := backup.Manifest()
	out := map[*manifest.Item]exclusion{}
	byPV := make(map[string]Volume, len(vols))
	for _, v := range vols {
		byPV[v.PV] = v
	}
	restorePVs := sel.RestorePVs == nil || *sel.RestorePVs
	var errs []error
	for _, it := range m.Items() {
		if it.GroupResource() != persistentVolumes {
			continue
		}
		v, recorded := byPV[it.Name]
		method := v.Method
		claim := manifest.ID{Resource: "persistentvolumeclaims", Namespace: v.ClaimNamespace, Name: v.Claim}
		if !recorded || method == "" {
			pv, err := body(backup, it)
			if err != nil {
				errs = append(errs, &VolumeError{PV: it.Name, Method: method, Reason: err.Error()})
				continue
			}
			method = VolumeAsIs
			if policy, _, _ := unstructured.NestedString(pv.Object, "spec", "persistentVolumeReclaimPolicy"); policy == "Delete" {
				method = VolumeProvisioned
			}
			if claim.Name == "" {
				claim.Namespace, _, _ = unstructured.NestedString(pv.Object, "spec", "claimRef", "namespace")
				claim.Name, _, _ = unstructured.NestedString(pv.Object, "spec", "claimRef", "name")
			}
		}
		vp.method[it] = method
		if claim.Name != "" {
			vp.claimMethod[claim] = method
		}
		_, pvOut := excluded[it]
		c, held := m.Get(claim)
		_, claimOut := excluded[c]
		if pvOut && (!held || claimOut) {
			continue // neither the volume nor its claim is restored
		}
		vp.takenOn[it] = true
		switch method {
		case VolumeNativeSnapshot:
			if !restorePVs {
				continue // restored as it was, pointing at the source's volume, as Velero does
			}
			switch {
			case v.Snapshot == nil || v.Snapshot.ID == "":
				errs = append(errs, &VolumeError{PV: it.Name, Method: method, Reason: "the backup records no snapshot ID"})
			default:
				switch s := ext.VolumeSnapshotters[v.Snapshot.Location].(type) {
				case nil:
					errs = append(errs, &VolumeError{PV: it.Name, Method: method, Reason: fmt.Sprintf(
						"no VolumeSnapshotter for its VolumeSnapshotLocation %q (provider %q): give the plugin that serves it", v.Snapshot.Location, v.Snapshot.Provider)})
				case UnavailableSnapshotter:
					errs = append(errs, &VolumeError{PV: it.Name, Method: method, Reason: fmt.Sprintf("VolumeSnapshotLocation %q: %v", v.Snapshot.Location, s.Err), Err: s.Err})
				default:
					vp.snapshot[it] = v.Snapshot
				}
			}
		case VolumeAsIs:
		case VolumeFileSystem:
			// With Extensions.PodVolumes, filled whatever restorePVs says, as Velero's
			// restore fills pod volumes whatever it says.
			if ext.PodVolumes == nil && restorePVs {
				errs = append(errs, &VolumeError{PV: it.Name, Method: method, Reason: "its files come back through the PodVolumeRestores of Velero's node-agent, " +
					"which this restore does not make without Velero (Extensions.PodVolumes); restorePVs false restores its claim empty"})
			}
			out[it] = exclusion{Volumes, fmt.Sprintf("%s: left out, its claim provisioned again", method)}
		default:
			out[it] = exclusion{Volumes, fmt.Sprintf("%s: left out, its claim provisioned again", method)}
		}
	}
	return vp, out, errors.Join(errs...)
}

// Velero's names for what links a claim to its CSI snapshot or its DataUpload.
const (
	// VolumeSnapshotAnnotation, on a claim Velero backed up by a CSI snapshot, names the
	// claim's VolumeSnapshot, in the claim's namespace.
	VolumeSnapshotAnnotation = "velero.io/volume-snapshot-name"
	// DataUploadAnnotation, on a claim whose data Velero moved, names the claim's
	// DataUpload, "namespace/name" (in Velero's namespace).
	DataUploadAnnotation = "velero.io/data-upload-name"
	// MustIncludeAnnotation is set by Velero's CSI actions on what they return: its
	// additional items are restored even where the filter leaves them out. The restore
	// takes it off what it creates, as Velero does.
	MustIncludeAnnotation = "restore.velero.io/must-include-additional-items"
)

var (
	volumeSnapshots        = schema.GroupResource{Group: "snapshot.storage.k8s.io", Resource: "volumesnapshots"}
	volumeSnapshotContents = schema.GroupResource{Group: "snapshot.storage.k8s.io", Resource: "volumesnapshotcontents"}
	dataUploads            = schema.GroupResource{Group: "velero.io", Resource: "datauploads"}
)

// claimObjects returns what the claims the restore makes need restored with them,
// whatever the filter says: the VolumeSnapshot and VolumeSnapshotContent of each claim
// whose data comes back from a CSI snapshot, which Velero's CSI actions restore as
// additional items they must include; and the DataUpload of each claim whose data was
// moved, which Velero's DataUpload action turns into the result the claim's action
// starts its DataDownload from (Velero restores DataUploads whatever the filter says,
// before the claims). uploads maps each such DataUpload to its claim. A claim whose
// snapshot or DataUpload the backup does not hold is a *VolumeError.
func (vp volumePlan) claimObjects(backup Backup, sel Selection, excluded map[*manifest.Item]exclusion) (
	needed map[*manifest.Item]bool, uploads map[*manifest.Item]*manifest.Item, err error) {
	if sel.RestorePVs != nil && !*sel.RestorePVs {
		return nil, nil, nil
	}
	m := backup.Manifest()
	needed, uploads = map[*manifest.Item]bool{}, map[*manifest.Item]*manifest.Item{}
	var errs []error
	for claimID, method := range vp.claimMethod {
		if method != VolumeCSISnapshot && method != VolumeDataMovement {
			continue
		}
		c, ok := m.Get(claimID)
		if _, out := excluded[c]; !ok || out {
			continue
		}
		missing := func(what string) {
			errs = append(errs, &VolumeError{Claim: c.Namespace + "/" + c.Name, Method: method, Reason: "the backup holds no " + what})
		}
		if method == VolumeDataMovement {
			name, ok := c.Annotations.Lookup(DataUploadAnnotation)
			if !ok {
				continue // Velero's action leaves it as it is, as it does
			}
			ns, name, _ := strings.Cut(name, "/")
			du, ok := m.Get(manifest.ID{Group: dataUploads.Group, Resource: dataUploads.Resource, Namespace: ns, Name: name})
			if !ok {
				missing(fmt.Sprintf("DataUpload %s/%s", ns, name))
				continue
			}
			needed[du], uploads[du] = true, c
			continue
		}
		vsName, ok := c.Annotations.Lookup(VolumeSnapshotAnnotation)
		if !ok {
			continue // Velero's action provisions it empty, as it does
		}
		vs, ok := m.Get(manifest.ID{Group: volumeSnapshots.Group, Resource: volumeSnapshots.Resource, Namespace: c.Namespace, Name: vsName})
		if !ok {
			missing(fmt.Sprintf("VolumeSnapshot %s/%s", c.Namespace, vsName))
			continue
		}
		needed[vs] = true
		obj, err := body(backup, vs)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if vscName, _, _ := unstructured.NestedString(obj.Object, "status", "boundVolumeSnapshotContentName"); vscName != "" {
			if vsc, ok := m.Get(manifest.ID{Group: volumeSnapshotContents.Group, Resource: volumeSnapshotContents.Resource, Name: vscName}); ok {
				needed[vsc] = true
			}
		}
	}
	return needed, uploads, errors.Join(errs...)
}

// dataUploadRule is the plan rule that restores each DataUpload of the backup before the
// claim whose data it moved: Velero's DataUpload action leaves the result the claim's
// action reads. It names those edges in plans.
type dataUploadRule map[*manifest.Item]*manifest.Item

func (dataUploadRule) Name() string { return "velero-data-upload" }

func (r dataUploadRule) AddEdges(b *graph.RuleBuilder) {
	index := make(map[*manifest.Item]int, 2*len(r))
	for du, claim := range r {
		index[du], index[claim] = -1, -1
	}
	for i, it := range b.Items() {
		if _, ok := index[it]; ok {
			index[it] = i
		}
	}
	for du, claim := range r {
		if index[du] >= 0 && index[claim] >= 0 {
			b.Edge(index[du], index[claim])
		}
	}
}

// body decodes it's body, at the version the backup recorded it at.
func body(backup Backup, it *manifest.Item) (*unstructured.Unstructured, error) {
	data, err := backup.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("%s: %w", it, err)
	}
	return obj, nil
}

// VolumeActions are the restore item actions a volume's data needs, by how it was
// backed up: Velero's CSI claim action (velero.io/csi-pvc-restorer) points a claim at
// its restored VolumeSnapshot or starts its DataDownload, from the result its
// DataUpload action (velero.io/dataupload) leaves of the backup's DataUpload; its pod
// volume action (velero.io/pod-volume-restore) puts the restore-wait init container
// into the Pod whose volume a PodVolumeRestore fills.
var VolumeActions = map[VolumeMethod][]string{
	VolumeCSISnapshot:  {"velero.io/csi-pvc-restorer"},
	VolumeDataMovement: {"velero.io/csi-pvc-restorer", "velero.io/dataupload"},
	VolumeFileSystem:   {PodVolumeAction},
}

// checkVolumeActions returns a *VolumeError for each volume whose data needs an action
// the restore does not run, when the restore restores volumes' data.
func (vp volumePlan) checkVolumeActions(sel Selection, running func(name string) bool) error {
	if sel.RestorePVs != nil && !*sel.RestorePVs {
		return nil
	}
	var errs []error
	for it, m := range vp.method {
		if !vp.takenOn[it] {
			continue
		}
		for _, action := range VolumeActions[m] {
			if !running(action) {
				errs = append(errs, &VolumeError{PV: it.Name, Method: m, Reason: fmt.Sprintf(
					"its data comes back through Velero's action %s, which this restore does not run: give Velero's plugins (the velero command)", action)})
			}
		}
	}
	for pod := range vp.filled {
		if !running(PodVolumeAction) {
			errs = append(errs, &VolumeError{Pod: pod.Namespace + "/" + pod.Name, Method: VolumeFileSystem, Reason: fmt.Sprintf(
				"its volumes' files come back through Velero's action %s, which this restore does not run: give Velero's plugins (the velero command)", PodVolumeAction)})
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

// claimGate is whether a restored claim holds back what depends on it until it is
// Bound, and why.
type claimGate struct {
	wait bool
	why  string
}

// storageClasses are the classes a restore's claims may bind through: the target's, and
// those the restore makes; by name, with the default class's name.
type storageClasses struct {
	binding      map[string]string // name -> volumeBindingMode
	defaultClass string
	// unread says why the target's classes could not be listed, when they could not.
	unread error
}

// targetStorageClasses reads the target's StorageClasses, and adds those the backup
// holds that the restore makes. A target that does not list them (one the user may not
// list them in) has none, and unread says why.
func targetStorageClasses(ctx context.Context, t Target, backup Backup, restored func(*manifest.Item) bool) storageClasses {
	sc := storageClasses{binding: map[string]string{}}
	add := func(o *unstructured.Unstructured) {
		mode, _, _ := unstructured.NestedString(o.Object, "volumeBindingMode")
		if mode == "" {
			mode = "Immediate"
		}
		sc.binding[o.GetName()] = mode
		if o.GetAnnotations()["storageclass.kubernetes.io/is-default-class"] == "true" {
			sc.defaultClass = o.GetName()
		}
	}
	list, err := t.Dynamic.Resource(schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}).List(ctx, metav1.ListOptions{})
	if err == nil {
		for i := range list.Items {
			add(&list.Items[i])
		}
	} else {
		sc.unread = err
	}
	for _, it := range backup.Manifest().Items() {
		if it.GroupResource() != storageClassesResource || !restored(it) {
			continue
		}
		if o, err := body(backup, it); err == nil {
			add(o)
		}
	}
	return sc
}

// gate decides whether the claim obj holds back the Pods that mount it until it is
// Bound. It does when it binds at once: to a volume the restore makes (volumeName set,
// the volume restored), or through a class of the target that binds Immediately. A
// claim whose class waits for its first consumer is not: it binds once the Pod that
// mounts it is scheduled, and the Pod would wait for it. Nor is one whose class the
// target does not have: nothing would bind it.
func (sc storageClasses) gate(claim *unstructured.Unstructured, volumeRestored bool) claimGate {
	if vn, _, _ := unstructured.NestedString(claim.Object, "spec", "volumeName"); vn != "" && volumeRestored {
		return claimGate{true, "waits until Bound to its restored volume " + vn}
	}
	class, set, _ := unstructured.NestedString(claim.Object, "spec", "storageClassName")
	if !set {
		class = claim.GetAnnotations()["volume.beta.kubernetes.io/storage-class"]
	}
	if class == "" && !set {
		class = sc.defaultClass
	}
	switch mode, ok := sc.binding[class]; {
	case class == "":
		return claimGate{false, "not waited for: no storage class, and the target has no default one"}
	case !ok:
		return claimGate{false, fmt.Sprintf("not waited for: the target has no storage class %s", class)}
	case mode == "WaitForFirstConsumer":
		return claimGate{false, fmt.Sprintf("not waited for: storage class %s binds it when its first Pod is scheduled, and the Pod would wait for it", class)}
	default:
		return claimGate{true, fmt.Sprintf("waits until Bound: storage class %s binds it %s", class, strings.ToLower(mode))}
	}
}

// claimGates decides for each claim the plan restores whether what mounts it waits
// until it is Bound (storageClasses.gate), reading the target's StorageClasses.
func (p *Plan) claimGates(ctx context.Context, target Target) (map[*manifest.Item]claimGate, error) {
	restored := func(it *manifest.Item) bool { _, out := p.excluded[it]; return !out }
	m := p.backup.Manifest()
	var claims []*manifest.Item
	for _, it := range m.Items() {
		if it.GroupResource() == persistentVolumeClaims && restored(it) {
			claims = append(claims, it)
		}
	}
	if len(claims) == 0 {
		return nil, nil
	}
	sc := targetStorageClasses(ctx, target, p.backup, restored)
	if sc.unread != nil {
		// Said, not failed: the claims are restored all the same, but what mounts them is
		// not held back for classes the restore cannot see.
		p.Warnings = append(p.Warnings, "the target's StorageClasses could not be listed, so no claim bound through one of them is waited for: "+sc.unread.Error())
	}
	gates := make(map[*manifest.Item]claimGate, len(claims))
	for _, it := range claims {
		obj, err := body(p.backup, it)
		if err != nil {
			return nil, err
		}
		vn, _, _ := unstructured.NestedString(obj.Object, "spec", "volumeName")
		pv, held := m.Get(manifest.ID{Resource: persistentVolumes.Resource, Name: vn})
		gates[it] = sc.gate(obj, vn != "" && held && restored(pv))
	}
	return gates, nil
}

// stepVolume makes a volume of the native snapshot of o, a PersistentVolume whose data
// comes back so, and points o at it. A PersistentVolume the target has already (a
// restore run again) keeps the volume it has: none is made, and the Existing policy
// decides what becomes of it. A dry run makes nothing.
func (r *run) stepVolume(ctx context.Context, o *Object) error {
	snap := r.plan.volumes.snapshot[o.Item]
	if snap == nil || o.DryRun {
		return nil
	}
	if _, err := o.Client.Get(ctx, o.Name, metav1.GetOptions{}); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	vs := r.plan.ext.VolumeSnapshotters[snap.Location]
	id, err := vs.CreateVolumeFromSnapshot(ctx, *snap)
	if err != nil {
		return fmt.Errorf("a volume of snapshot %s (location %s): %w", snap.ID, snap.Location, err)
	}
	o.own()
	pv, err := vs.SetVolumeID(ctx, o.Body.DeepCopy(), id)
	if err != nil {
		return fmt.Errorf("pointing the volume at %s, made of snapshot %s: %w", id, snap.ID, err)
	}
	o.Body = pv
	r.log.InfoContext(ctx, "volume made of a snapshot", "object", o.Item.String(), "snapshot", snap.ID, "location", snap.Location, "volume", id)
	return nil
}

// volumeOf is how the data of it comes back, when it is a PersistentVolume, a claim, or
// a Pod whose volumes are filled.
func (p *Plan) volumeOf(it *manifest.Item) VolumeMethod {
	switch it.GroupResource() {
	case persistentVolumes:
		return p.volumes.method[it]
	case persistentVolumeClaims:
		return p.volumes.claimMethod[manifest.ID{Resource: it.Resource, Namespace: it.Namespace, Name: it.Name}]
	case podsResource:
		if _, ok := p.volumes.filled[it]; ok {
			return VolumeFileSystem
		}
	}
	return ""
}

// volumeObjects iterates the report's PersistentVolumes and claims whose volume's data
// the plan decided on; none, without a pass over the objects, when it decided on none.
func (r *Report) volumeObjects() iter.Seq[ObjectResult] {
	return func(yield func(ObjectResult) bool) {
		if len(r.plan.volumes.method) == 0 {
			return
		}
		for o := range r.Objects() {
			if o.Volume != "" && !yield(o) {
				return
			}
		}
	}
}

// unboundWhy says, of claim o that did not become Bound, what its provisioner was left
// waiting for, where the restore can read it: the VolumeSnapshot it is to be made from,
// when that is not ready to use. The snapshot controller and the CSI snapshotter record
// why on the snapshot and on its content (a snapshot the driver no longer has, a
// VolumeSnapshotClass that is not there), which the provisioner's events on the claim
// only repeat as "not ready". It returns "" for a claim made from no VolumeSnapshot.
func (r *run) unboundWhy(ctx context.Context, o *Object) string {
	source, _, _ := unstructured.NestedStringMap(o.Body.Object, "spec", "dataSource")
	if source["kind"] != "VolumeSnapshot" || source["apiGroup"] != volumeSnapshots.Group || source["name"] == "" {
		return ""
	}
	// The claim's own deadline has passed: the reads have a few seconds of their own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	ns, name := o.Target.GetNamespace(), source["name"]
	vs, err := r.target.Dynamic.Resource(volumeSnapshots.WithVersion("v1")).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("its VolumeSnapshot %s/%s: %v", ns, name, err)
	}
	if msg, _, _ := unstructured.NestedString(vs.Object, "status", "error", "message"); msg != "" {
		return fmt.Sprintf("its VolumeSnapshot %s/%s: %s", ns, name, msg)
	}
	content, _, _ := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName")
	if content == "" {
		content, _, _ = unstructured.NestedString(vs.Object, "spec", "source", "volumeSnapshotContentName")
	}
	if content != "" {
		vsc, err := r.target.Dynamic.Resource(volumeSnapshotContents.WithVersion("v1")).Get(ctx, content, metav1.GetOptions{})
		if err != nil {
			return fmt.Sprintf("its VolumeSnapshot %s/%s, content %s: %v", ns, name, content, err)
		}
		if msg, _, _ := unstructured.NestedString(vsc.Object, "status", "error", "message"); msg != "" {
			return fmt.Sprintf("its VolumeSnapshot %s/%s, content %s: %s", ns, name, content, msg)
		}
	}
	if ready, _, _ := unstructured.NestedBool(vs.Object, "status", "readyToUse"); !ready {
		return fmt.Sprintf("its VolumeSnapshot %s/%s is not ready to use", ns, name)
	}
	return ""
}
