package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// DataMoverName is the name of the data mover StartDataMover runs, for Velero's
// --data-mover.
const DataMoverName = "example.io/dir-mover"

var (
	dataUploadsGVR   = schema.GroupVersionResource{Group: "velero.io", Version: "v2alpha1", Resource: "datauploads"}
	dataDownloadsGVR = schema.GroupVersionResource{Group: "velero.io", Version: "v2alpha1", Resource: "datadownloads"}
	snapshotsGVR     = schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}
	contentsGVR      = schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotcontents"}
	claimsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	volumesGVR       = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
	podsGVR          = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	podBackupsGVR    = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "podvolumebackups"}
	podRestoresGVR   = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "podvolumerestores"}
)

// dynamicPVRestoreLabel is the label Velero's claim action selects the volume of a data
// movement restore by; the data mover puts it on the volume it makes.
const dynamicPVRestoreLabel = "velero.io/dynamic-pv-restore"

// StartDataMover runs, in this process, a data mover of Velero's contract for the
// DataUploads and DataDownloads of c whose spec.datamover is DataMoverName: the part of
// a data movement that Velero leaves to its node-agent (or to a third party's mover),
// which needs a kubelet this test bed does not have. A DataUpload's CSI snapshot (a
// directory of csi's storage) is copied into repo under the DataUpload's name, its
// snapshot ID; a DataDownload's snapshot is copied into a new volume of csi's driver,
// made a PersistentVolume bound to the DataDownload's claim (with the label the claim
// selects it by) once the claim exists. Each is then Completed, with its progress. stop
// ends it.
func (c *Cluster) StartDataMover(csi *CSI, repo string) (stop func(), err error) {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		m := &mover{dyn: dyn, csi: csi, repo: repo}
		for ctx.Err() == nil {
			m.pass(ctx, dataUploadsGVR, m.upload)
			m.pass(ctx, dataDownloadsGVR, m.download)
			m.pass(ctx, podBackupsGVR, m.backupPodVolume)
			m.pass(ctx, podRestoresGVR, m.restorePodVolume)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); wg.Wait() }, nil
}

type mover struct {
	dyn  dynamic.Interface
	csi  *CSI
	repo string
}

// pass carries out each new object of gvr that is the mover's: do returns its status
// once done, or nil to look again on the next pass.
func (m *mover) pass(ctx context.Context, gvr schema.GroupVersionResource, do func(context.Context, *unstructured.Unstructured) (map[string]any, error)) {
	list, err := m.dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		return // Velero's CRDs are not installed yet
	}
	for i := range list.Items {
		o := &list.Items[i]
		mover, _, _ := unstructured.NestedString(o.Object, "spec", "datamover")
		if gvr == podBackupsGVR || gvr == podRestoresGVR {
			mover = DataMoverName // the node-agent's own, for every pod volume
		}
		phase, _, _ := unstructured.NestedString(o.Object, "status", "phase")
		if mover != DataMoverName || (phase != "" && phase != "New") {
			continue
		}
		started := time.Now().UTC().Format(time.RFC3339)
		status, err := do(ctx, o)
		if status == nil && err == nil {
			continue
		}
		if err != nil {
			status = map[string]any{"phase": "Failed", "message": err.Error()}
		}
		status["startTimestamp"], status["completionTimestamp"] = started, time.Now().UTC().Format(time.RFC3339)
		o.Object["status"] = status
		if _, err := m.dyn.Resource(gvr).Namespace(o.GetNamespace()).Update(ctx, o, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			continue // looked at again on the next pass
		}
	}
}

// upload copies the DataUpload's CSI snapshot into the repository.
func (m *mover) upload(ctx context.Context, du *unstructured.Unstructured) (map[string]any, error) {
	ns, _, _ := unstructured.NestedString(du.Object, "spec", "sourceNamespace")
	vsName, _, _ := unstructured.NestedString(du.Object, "spec", "csiSnapshot", "volumeSnapshot")
	vs, err := m.dyn.Resource(snapshotsGVR).Namespace(ns).Get(ctx, vsName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("VolumeSnapshot %s/%s: %w", ns, vsName, err)
	}
	vscName, _, _ := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName")
	vsc, err := m.dyn.Resource(contentsGVR).Get(ctx, vscName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("VolumeSnapshotContent %s: %w", vscName, err)
	}
	handle, _, _ := unstructured.NestedString(vsc.Object, "status", "snapshotHandle")
	if handle == "" {
		return nil, nil // not cut yet
	}
	id := du.GetName()
	if err := os.CopyFS(filepath.Join(m.repo, id), os.DirFS(filepath.Join(m.csi.Root, "snapshots", handle))); err != nil {
		return nil, err
	}
	size := dirSize(filepath.Join(m.repo, id))
	return map[string]any{"phase": "Completed", "snapshotID": id, "nodeOS": "linux", "path": "/",
		"progress": map[string]any{"totalBytes": size, "bytesDone": size}}, nil
}

// download copies the DataDownload's snapshot into a new volume, bound to its claim.
func (m *mover) download(ctx context.Context, dd *unstructured.Unstructured) (map[string]any, error) {
	ns, _, _ := unstructured.NestedString(dd.Object, "spec", "targetVolume", "namespace")
	name, _, _ := unstructured.NestedString(dd.Object, "spec", "targetVolume", "pvc")
	id, _, _ := unstructured.NestedString(dd.Object, "spec", "snapshotID")
	claim, err := m.dyn.Resource(claimsGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil // the restore makes it after its action made the DataDownload
	}
	if err != nil {
		return nil, err
	}
	selected, _, _ := unstructured.NestedString(claim.Object, "spec", "selector", "matchLabels", dynamicPVRestoreLabel)
	class, _, _ := unstructured.NestedString(claim.Object, "spec", "storageClassName")
	size, _, _ := unstructured.NestedString(claim.Object, "spec", "resources", "requests", "storage")
	handle := "moved-" + dd.GetName()
	if err := os.CopyFS(m.csi.Volume(handle), os.DirFS(filepath.Join(m.repo, id))); err != nil {
		return nil, err
	}
	pv := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "PersistentVolume",
		"metadata": map[string]any{"name": handle, "labels": map[string]any{dynamicPVRestoreLabel: selected}},
		"spec": map[string]any{"capacity": map[string]any{"storage": size}, "accessModes": []any{"ReadWriteOnce"},
			"persistentVolumeReclaimPolicy": "Delete", "storageClassName": class,
			"csi":      map[string]any{"driver": CSIDriverName, "volumeHandle": handle},
			"claimRef": map[string]any{"kind": "PersistentVolumeClaim", "namespace": ns, "name": name, "uid": string(claim.GetUID())}}}}
	if _, err := m.dyn.Resource(volumesGVR).Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	n := dirSize(m.csi.Volume(handle))
	return map[string]any{"phase": "Completed", "progress": map[string]any{"totalBytes": n, "bytesDone": n}}, nil
}

// dirSize is the bytes of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// podVolume returns the directory of the CSI volume bound to the claim that the volume
// named volume of the Pod ref (a PodVolumeBackup's or PodVolumeRestore's spec.pod)
// mounts, or "" while the claim is not bound.
func (m *mover) podVolume(ctx context.Context, ref map[string]any, volume string) (string, error) {
	ns, _ := ref["namespace"].(string)
	name, _ := ref["name"].(string)
	pod, err := m.dyn.Resource(podsGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("pod %s/%s: %w", ns, name, err)
	}
	vols, _, _ := unstructured.NestedSlice(pod.Object, "spec", "volumes")
	var claimName string
	for _, v := range vols {
		if v, _ := v.(map[string]any); v["name"] == volume {
			claimName, _, _ = unstructured.NestedString(v, "persistentVolumeClaim", "claimName")
		}
	}
	if claimName == "" {
		return "", fmt.Errorf("pod %s/%s: no claim mounted as volume %s", ns, name, volume)
	}
	claim, err := m.dyn.Resource(claimsGVR).Namespace(ns).Get(ctx, claimName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	pvName, _, _ := unstructured.NestedString(claim.Object, "spec", "volumeName")
	if phase, _, _ := unstructured.NestedString(claim.Object, "status", "phase"); phase != "Bound" || pvName == "" {
		return "", nil
	}
	pv, err := m.dyn.Resource(volumesGVR).Get(ctx, pvName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	handle, _, _ := unstructured.NestedString(pv.Object, "spec", "csi", "volumeHandle")
	return m.csi.Volume(handle), nil
}

// backupPodVolume copies the files of a PodVolumeBackup's volume into the repository,
// as the node-agent's uploader does, under the PodVolumeBackup's name, its snapshot ID.
func (m *mover) backupPodVolume(ctx context.Context, pvb *unstructured.Unstructured) (map[string]any, error) {
	ref, _, _ := unstructured.NestedMap(pvb.Object, "spec", "pod")
	volume, _, _ := unstructured.NestedString(pvb.Object, "spec", "volume")
	dir, err := m.podVolume(ctx, ref, volume)
	if err != nil || dir == "" {
		return nil, err
	}
	id := pvb.GetName()
	if err := os.CopyFS(filepath.Join(m.repo, id), os.DirFS(dir)); err != nil {
		return nil, err
	}
	size := dirSize(dir)
	return map[string]any{"phase": "Completed", "snapshotID": id, "path": dir,
		"progress": map[string]any{"totalBytes": size, "bytesDone": size}}, nil
}

// restorePodVolume copies a PodVolumeRestore's snapshot into the volume of its Pod, once
// the claim the volume mounts is bound, as the node-agent does, and writes the file
// that the Pod's restore-wait init container waits for, .velero/UID, named after the
// UID of the PodVolumeRestore's owner, its Restore; one without an owner fails, as
// the node-agent fails it.
func (m *mover) restorePodVolume(ctx context.Context, pvr *unstructured.Unstructured) (map[string]any, error) {
	owners := pvr.GetOwnerReferences()
	if len(owners) == 0 {
		return nil, errors.New("error finding restore UID")
	}
	ref, _, _ := unstructured.NestedMap(pvr.Object, "spec", "pod")
	volume, _, _ := unstructured.NestedString(pvr.Object, "spec", "volume")
	id, _, _ := unstructured.NestedString(pvr.Object, "spec", "snapshotID")
	dir, err := m.podVolume(ctx, ref, volume)
	if err != nil || dir == "" {
		return nil, err
	}
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(m.repo, id))); err != nil {
		return nil, err
	}
	n := dirSize(dir)
	if err := os.RemoveAll(filepath.Join(dir, ".velero")); err != nil { // an earlier restore's
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, ".velero"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ".velero", string(owners[0].UID)), nil, 0o644); err != nil {
		return nil, err
	}
	return map[string]any{"phase": "Completed", "progress": map[string]any{"totalBytes": n, "bytesDone": n}}, nil
}
