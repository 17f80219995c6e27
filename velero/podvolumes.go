package velero

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/label"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
)

var (
	podVolumeBackupsResource   = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "podvolumebackups"}
	podVolumeRestoresResource  = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "podvolumerestores"}
	backupRepositoriesResource = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "backuprepositories"}
	daemonSetsResource         = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}
	podsResource               = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	claimsResource             = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
)

// nodeAgent is the name of Velero's node-agent DaemonSet, and the role its Pods are
// labelled with.
const nodeAgent = "node-agent"

// PodVolumeRestorer is restore.PodVolumeRestorer through Velero's node-agent, as
// Velero's restore does it (its pkg/podvolume restorer, whose package does not build
// with the Kubernetes libraries this module takes): for each volume of a restored Pod
// that a PodVolumeBackup of the backup holds, a PodVolumeRestore in Velero's namespace,
// after the BackupRepository of the volume's namespace, location and repository type is
// Ready (made as Velero makes it when there is none); the node-agent on the Pod's node
// fills the volume, and the restore waits for each PodVolumeRestore to end. Make one
// with Client.PodVolumeRestorer.
type PodVolumeRestorer struct {
	v        Client // Velero in the cluster restored into
	location string
	// byPod holds the backup's completed PodVolumeBackups, by their Pod's "namespace/name".
	byPod map[string][]velerov1.PodVolumeBackup
	// OwnedByRestore makes each PodVolumeRestore owned by the Restore object the restore
	// carries out (its ria.Restore's UID), as Velero's are, so that deleting the Restore
	// deletes them: true only when that object exists in the cluster restored into (the
	// controller's; the command's when it records the restore there).
	OwnedByRestore bool
	// Poll is how often the PodVolumeRestores and the repository are looked at; default 1 s.
	Poll time.Duration
}

// PodVolumeRestorer reads the PodVolumeBackups of backup, which Velero's backup sync
// keeps in Velero's namespace, and returns the PodVolumeRestorer of a restore of it into
// the cluster target reaches Velero in (its node-agent fills the volumes), v's or
// another's.
func (v Client) PodVolumeRestorer(ctx context.Context, backup *Backup, target Client) (*PodVolumeRestorer, error) {
	sel := labels.SelectorFromSet(labels.Set{velerov1.BackupNameLabel: label.GetValidName(backup.Name)})
	r := &PodVolumeRestorer{v: target, location: backup.Location.Name, byPod: map[string][]velerov1.PodVolumeBackup{}}
	list, err := v.Dynamic.Resource(podVolumeBackupsResource).Namespace(v.namespace()).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if apierrors.IsNotFound(err) {
		return r, nil // a Velero without file-system backups' resource made none
	}
	if err != nil {
		return nil, fmt.Errorf("the PodVolumeBackups of backup %s: %w", backup.Name, err)
	}
	for _, o := range list.Items {
		var pvb velerov1.PodVolumeBackup
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &pvb); err != nil {
			return nil, fmt.Errorf("PodVolumeBackup %s: %w", o.GetName(), err)
		}
		// One without a snapshot ID holds nothing to restore (failed, or an empty volume).
		if pvb.Status.SnapshotID == "" {
			continue
		}
		key := pvb.Spec.Pod.Namespace + "/" + pvb.Spec.Pod.Name
		r.byPod[key] = append(r.byPod[key], pvb)
	}
	return r, nil
}

// Volumes names the volumes of the backup's Pod namespace/name that a PodVolumeBackup
// holds.
func (r *PodVolumeRestorer) Volumes(namespace, name string) []string {
	var out []string
	for _, pvb := range r.byPod[namespace+"/"+name] {
		out = append(out, pvb.Spec.Volume)
	}
	sort.Strings(out)
	return out
}

// RestorePodVolumes makes a PodVolumeRestore for each volume of pod that the backup
// holds, unless one this restore made is there already, and waits until each has
// ended. A volume whose source is projected or the downward API is left as Velero
// leaves it. Without Velero's node-agent DaemonSet, or with none of its Pods running on
// pod's node once it is scheduled there, it fails saying so rather than wait.
func (r *PodVolumeRestorer) RestorePodVolumes(ctx context.Context, pod *unstructured.Unstructured, sourceNamespace string, req *ria.Restore) error {
	pvbs := r.byPod[sourceNamespace+"/"+pod.GetName()]
	if len(pvbs) == 0 {
		return nil
	}
	v, ns := r.v, r.v.namespace()
	if _, err := v.Dynamic.Resource(daemonSetsResource).Namespace(ns).Get(ctx, nodeAgent, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return fmt.Errorf("no DaemonSet %s/%s: Velero's node-agent fills pod volumes (velero install --use-node-agent)", ns, nodeAgent)
	} else if err != nil {
		return err
	}
	live, err := v.Dynamic.Resource(podsResource).Namespace(pod.GetNamespace()).Get(ctx, pod.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	var spec struct {
		Volumes []struct {
			Name                  string         `json:"name"`
			Projected             map[string]any `json:"projected"`
			DownwardAPI           map[string]any `json:"downwardAPI"`
			PersistentVolumeClaim *struct {
				ClaimName string `json:"claimName"`
			} `json:"persistentVolumeClaim"`
		} `json:"volumes"`
	}
	podSpec, _, _ := unstructured.NestedMap(live.Object, "spec")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(podSpec, &spec); err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.GetNamespace(), pod.GetName(), err)
	}
	// What this restore made for this Pod before (a run again from the journal) is
	// followed, not made again.
	sel := labels.SelectorFromSet(labels.Set{velerov1.PodUIDLabel: string(pod.GetUID()), velerov1.RestoreUIDLabel: string(req.UID)})
	earlier, err := v.Dynamic.Resource(podVolumeRestoresResource).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return fmt.Errorf("the PodVolumeRestores of pod %s/%s: %w", pod.GetNamespace(), pod.GetName(), err)
	}
	madeFor := map[string]string{}
	for _, o := range earlier.Items {
		volume, _, _ := unstructured.NestedString(o.Object, "spec", "volume")
		madeFor[volume] = o.GetName()
	}
	var made []string
	var errs []error
	for _, pvb := range pvbs {
		if name, ok := madeFor[pvb.Spec.Volume]; ok {
			made = append(made, name)
			continue
		}
		i := -1
		for j, vol := range spec.Volumes {
			if vol.Name == pvb.Spec.Volume {
				i = j
			}
		}
		if i >= 0 && (spec.Volumes[i].Projected != nil || spec.Volumes[i].DownwardAPI != nil) {
			continue
		}
		uploader := pvb.Spec.UploaderType
		if uploader == "" {
			uploader = "restic" // what Velero takes a PodVolumeBackup without one for
		}
		repoType := velerov1.BackupRepositoryTypeRestic
		if uploader == "kopia" {
			repoType = velerov1.BackupRepositoryTypeKopia
		}
		repo, err := r.repository(ctx, sourceNamespace, repoType)
		if err != nil {
			errs = append(errs, fmt.Errorf("volume %s: %w", pvb.Spec.Volume, err))
			continue
		}
		pvr := velerov1.PodVolumeRestore{
			TypeMeta: metav1.TypeMeta{APIVersion: velerov1.SchemeGroupVersion.String(), Kind: "PodVolumeRestore"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: req.Name + "-", Labels: map[string]string{
				velerov1.RestoreNameLabel: label.GetValidName(req.Name),
				velerov1.RestoreUIDLabel:  string(req.UID),
				velerov1.PodUIDLabel:      string(pod.GetUID()),
			}},
			Spec: velerov1.PodVolumeRestoreSpec{
				Pod:                   corev1.ObjectReference{Kind: "Pod", Namespace: pod.GetNamespace(), Name: pod.GetName(), UID: pod.GetUID()},
				Volume:                pvb.Spec.Volume,
				SnapshotID:            pvb.Status.SnapshotID,
				SnapshotSize:          pvb.Status.Progress.TotalBytes,
				BackupStorageLocation: r.location, UploaderType: uploader, SourceNamespace: sourceNamespace,
			},
		}
		if repoType == velerov1.BackupRepositoryTypeRestic {
			pvr.Spec.RepoIdentifier, _, _ = unstructured.NestedString(repo.Object, "spec", "resticIdentifier")
		}
		if r.OwnedByRestore {
			yes := true
			pvr.OwnerReferences = []metav1.OwnerReference{{APIVersion: velerov1.SchemeGroupVersion.String(), Kind: "Restore",
				Name: req.Name, UID: req.UID, Controller: &yes}}
		}
		if i >= 0 && spec.Volumes[i].PersistentVolumeClaim != nil {
			claim, err := v.Dynamic.Resource(claimsResource).Namespace(pod.GetNamespace()).Get(ctx, spec.Volumes[i].PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
			if err != nil {
				errs = append(errs, fmt.Errorf("volume %s: its claim: %w", pvb.Spec.Volume, err))
				continue
			}
			pvr.Labels[velerov1.PVCUIDLabel] = string(claim.GetUID())
		}
		if uc := uploaderConfig(req); uc != nil {
			pvr.Spec.UploaderSettings = uploaderSettings(uc)
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&pvr)
		if err != nil {
			return err
		}
		created, err := v.Dynamic.Resource(podVolumeRestoresResource).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("volume %s: %w", pvb.Spec.Volume, err))
			continue
		}
		made = append(made, created.GetName())
	}
	if err := r.wait(ctx, pod, made); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// uploaderConfig is the spec.uploaderConfig of the Restore req carries out, or nil.
func uploaderConfig(req *ria.Restore) *velerov1.UploaderConfigForRestore {
	raw, ok := req.Spec["uploaderConfig"].(map[string]any)
	if !ok {
		return nil
	}
	var uc velerov1.UploaderConfigForRestore
	if runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &uc) != nil {
		return nil
	}
	return &uc
}

// uploaderSettings is uc as a PodVolumeRestore's spec.uploaderSettings says it: Velero's
// uploader/util.StoreRestoreConfig, whose package brings dependencies this module does
// not otherwise need.
func uploaderSettings(uc *velerov1.UploaderConfigForRestore) map[string]string {
	sparse := false
	if uc.WriteSparseFiles != nil {
		sparse = *uc.WriteSparseFiles
	}
	out := map[string]string{"WriteSparseFiles": strconv.FormatBool(sparse)}
	if uc.ParallelFilesDownload > 0 {
		out["ParallelFilesDownload"] = strconv.Itoa(uc.ParallelFilesDownload)
	}
	return out
}

// repository returns the BackupRepository of volumeNamespace in the location, of
// repoType, once it is Ready, making it first when there is none, as Velero's
// repository ensurer does (its name and labels Velero's, so that Velero's repository
// controller provisions it and Velero's restores find it).
func (r *PodVolumeRestorer) repository(ctx context.Context, volumeNamespace, repoType string) (*unstructured.Unstructured, error) {
	v, ns := r.v, r.v.namespace()
	set := labels.Set{
		velerov1.VolumeNamespaceLabel: label.GetValidName(volumeNamespace),
		velerov1.StorageLocationLabel: label.GetValidName(r.location),
		velerov1.RepositoryTypeLabel:  label.GetValidName(repoType),
	}
	repos := v.Dynamic.Resource(backupRepositoriesResource).Namespace(ns)
	var last string
	for {
		list, err := repos.List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(set).String()})
		if err != nil {
			return nil, fmt.Errorf("BackupRepository of namespace %s: %w", volumeNamespace, err)
		}
		switch len(list.Items) {
		case 0:
			repo := &velerov1.BackupRepository{
				TypeMeta:   metav1.TypeMeta{APIVersion: velerov1.SchemeGroupVersion.String(), Kind: "BackupRepository"},
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%s-%s", volumeNamespace, r.location, repoType), Labels: set},
				Spec:       velerov1.BackupRepositorySpec{VolumeNamespace: volumeNamespace, BackupStorageLocation: r.location, RepositoryType: repoType},
			}
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(repo)
			if err != nil {
				return nil, err
			}
			if _, err := repos.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("BackupRepository of namespace %s: %w", volumeNamespace, err)
			}
		case 1:
			repo := &list.Items[0]
			phase, _, _ := unstructured.NestedString(repo.Object, "status", "phase")
			if phase == string(velerov1.BackupRepositoryPhaseReady) {
				return repo, nil
			}
			msg, _, _ := unstructured.NestedString(repo.Object, "status", "message")
			last = fmt.Sprintf("BackupRepository %s/%s is %q: %s", ns, repo.GetName(), phase, msg)
		default:
			return nil, fmt.Errorf("more than one BackupRepository of namespace %s, location %s, type %s", volumeNamespace, r.location, repoType)
		}
		select {
		case <-ctx.Done():
			if last == "" {
				last = "no BackupRepository"
			}
			return nil, fmt.Errorf("%s: %w", last, ctx.Err())
		case <-time.After(r.poll()):
		}
	}
}

func (r *PodVolumeRestorer) poll() time.Duration {
	if r.Poll > 0 {
		return r.Poll
	}
	return time.Second
}

// wait returns once each PodVolumeRestore of names has ended: an error names each that
// failed or was cancelled, and says so when no node-agent runs on pod's node.
func (r *PodVolumeRestorer) wait(ctx context.Context, pod *unstructured.Unstructured, names []string) error {
	v, ns := r.v, r.v.namespace()
	left := map[string]bool{}
	for _, n := range names {
		left[n] = true
	}
	var errs []error
	agentSeen := false
	for len(left) > 0 {
		for name := range left {
			o, err := v.Dynamic.Resource(podVolumeRestoresResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				continue // looked at again
			}
			phase, _, _ := unstructured.NestedString(o.Object, "status", "phase")
			msg, _, _ := unstructured.NestedString(o.Object, "status", "message")
			volume, _, _ := unstructured.NestedString(o.Object, "spec", "volume")
			switch velerov1.PodVolumeRestorePhase(phase) {
			case velerov1.PodVolumeRestorePhaseCompleted:
				delete(left, name)
			case velerov1.PodVolumeRestorePhaseFailed, velerov1.PodVolumeRestorePhaseCanceled:
				errs = append(errs, fmt.Errorf("volume %s: PodVolumeRestore %s/%s %s: %s", volume, ns, name, strings.ToLower(phase), msg))
				delete(left, name)
			}
		}
		if len(left) == 0 {
			break
		}
		if !agentSeen {
			ok, err := r.agentOnNode(ctx, pod)
			if err != nil {
				errs = append(errs, err)
				break
			}
			agentSeen = ok
		}
		select {
		case <-ctx.Done():
			var waiting []string
			for n := range left {
				waiting = append(waiting, n)
			}
			sort.Strings(waiting)
			errs = append(errs, fmt.Errorf("PodVolumeRestores %s/%v not done: %w", ns, waiting, ctx.Err()))
			return errors.Join(errs...)
		case <-time.After(r.poll()):
		}
	}
	return errors.Join(errs...)
}

// agentOnNode says whether a node-agent Pod runs on the node pod is scheduled to: false
// while pod is not scheduled, an error when it is and none runs there.
func (r *PodVolumeRestorer) agentOnNode(ctx context.Context, pod *unstructured.Unstructured) (bool, error) {
	v, ns := r.v, r.v.namespace()
	live, err := v.Dynamic.Resource(podsResource).Namespace(pod.GetNamespace()).Get(ctx, pod.GetName(), metav1.GetOptions{})
	if err != nil {
		return false, nil
	}
	node, _, _ := unstructured.NestedString(live.Object, "spec", "nodeName")
	if node == "" {
		return false, nil
	}
	agents, err := v.Dynamic.Resource(podsResource).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "role=" + nodeAgent})
	if err != nil {
		return false, nil
	}
	for _, a := range agents.Items {
		n, _, _ := unstructured.NestedString(a.Object, "spec", "nodeName")
		phase, _, _ := unstructured.NestedString(a.Object, "status", "phase")
		if n == node && phase == "Running" {
			return true, nil
		}
	}
	return false, fmt.Errorf("no node-agent Pod of %s runs on node %s, where pod %s/%s is: none fills its volumes", ns, node, pod.GetNamespace(), pod.GetName())
}
