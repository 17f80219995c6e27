package test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
	"github.com/restoregraph/restoregraph/velero"
	"github.com/restoregraph/restoregraph/velero/controller"
)

// csiCluster is a cluster of controllers, scheduler and kwok's nodes, with the CSI
// stack: claims of harness.CSIStorageClass are provisioned and bound, and snapshotted
// through harness.CSISnapshotClass, in the storage at root.
func csiCluster(t testing.TB, root string) (*harness.Cluster, *harness.CSI) {
	t.Helper()
	c := veleroCluster(t)
	csi, err := c.StartCSI(context.Background(), root)
	require.NoError(t, err)
	return c, csi
}

// csiApp makes namespace ns with claims of the CSI class: a StatefulSet's (data-db-0)
// and one a Deployment mounts (uploads). Once they are Bound it writes a file into
// each one's volume, and returns the files' contents by claim.
func csiApp(t testing.TB, c *harness.Cluster, csi *harness.CSI, ns string) map[string]string {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	claim := corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		StorageClassName: ptr.To(harness.CSIStorageClass),
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}
	_, err = cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "uploads"}, Spec: claim}, metav1.CreateOptions{})
	require.NoError(t, err)
	labels := func(app string) map[string]string { return map[string]string{"app": app} }
	pod := func(app, claimName string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels(app)}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: app, Image: "example.io/" + app + ":1", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes:    []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}}}}}
	}
	web := pod("web", "uploads")
	_, err = cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels("web")}, Template: web}}, metav1.CreateOptions{})
	require.NoError(t, err)
	db := pod("db", "")
	db.Spec.Volumes = nil
	_, err = cs.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels("db")}, Template: db,
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: claim}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	files := map[string]string{}
	for _, name := range []string{"uploads", "data-db-0"} {
		handle := boundVolume(t, c, ns, name)
		files[name] = "written into " + name + " before the backup\n"
		require.NoError(t, os.WriteFile(filepath.Join(csi.Volume(handle), "content.txt"), []byte(files[name]), 0o644))
	}
	return files
}

// boundVolume waits until claim ns/name is Bound, and returns its volume's handle.
func boundVolume(t testing.TB, c *harness.Cluster, ns, name string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	var handle string
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || pvc.Status.Phase != corev1.ClaimBound {
			return false, nil
		}
		pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil || pv.Spec.CSI == nil {
			return false, nil
		}
		handle = pv.Spec.CSI.VolumeHandle
		return true, nil
	})
	require.NoError(t, err, "claim %s/%s Bound:\nprovisioner:\n%s\ncsi-driver:\n%s", ns, name, c.Log("csi-provisioner"), c.Log("csi-driver"))
	return handle
}

// assertVolumesHold checks that every claim of files is Bound in ns to a volume that
// holds what was written into the backed-up one, and that the Pods that mount them
// exist.
func assertVolumesHold(t *testing.T, c *harness.Cluster, csi *harness.CSI, ns string, files map[string]string) {
	t.Helper()
	for claim, want := range files {
		got, err := os.ReadFile(filepath.Join(csi.Volume(boundVolume(t, c, ns, claim)), "content.txt"))
		require.NoError(t, err, "claim %s/%s: its restored volume holds the file", ns, claim)
		assert.Equal(t, want, string(got), "claim %s/%s", ns, claim)
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		return err == nil && len(pods.Items) >= 2
	}, time.Minute, 200*time.Millisecond, "the Pods that mount the claims")
}

// veleroWithPlugins is a directory as Velero's /plugins holds plugins, of links: Velero's
// own command, whose built-in actions restore CSI snapshots, and its AWS object store.
func veleroWithPlugins(t testing.TB, v *harness.Velero) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Symlink(v.Binary(), filepath.Join(dir, "velero")))
	aws, err := harness.VeleroPlugins()
	require.NoError(t, err)
	require.NoError(t, os.Symlink(filepath.Join(aws, "velero-plugin-for-aws"), filepath.Join(dir, "velero-plugin-for-aws")))
	return dir
}

// TestVeleroCSIRestoreSideBySide: the real Velero server backs up a namespace whose
// claims hold files, through CSI snapshots of the test driver (the real
// external-snapshotter and snapshot controller); the backup is restored into fresh
// clusters with the same CSI stack, by velero restore create, by restoregraph restore
// (Velero's own CSI actions, run through a plugin directory of links), and by
// restoregraph's controller (a Restore with restorePVs, into another namespace). Every
// claim is Bound to a volume holding what was written, provisioned again from its
// snapshot by the real external-provisioner, and its Pods exist; restoregraph's Pods are
// made once their claims are Bound.
func TestVeleroCSIRestoreSideBySide(t *testing.T) {
	t.Parallel() // its own control planes and S3 server: beside the other tests that have theirs
	ctx := context.Background()
	const name = "csi-data"
	s3srv, err := harness.StartS3(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(s3srv.Stop)
	csiOn := harness.VeleroOptions{Features: []string{"EnableCSI"}}
	storage := t.TempDir() // one storage system, which every cluster's driver reaches

	src, srcCSI := csiCluster(t, storage)
	files := csiApp(t, src, srcCSI, "data")
	v, err := src.StartVelero(ctx, s3srv, csiOn)
	require.NoError(t, err)
	out, err := v.Run(ctx, "backup", "create", name, "--include-namespaces", "data", "--snapshot-volumes", "--wait")
	require.NoError(t, err, out)
	require.Equal(t, "Completed", veleroPhase(t, src, veleroBackups, name, "Completed", "PartiallyFailed", "Failed"), "velero backup:\n%s", v.Log())
	src.StopVelero()
	src.Stop()
	methods := volumeMethods(t, s3srv, name)
	assert.Equal(t, map[string]restore.VolumeMethod{"uploads": restore.VolumeCSISnapshot, "data-db-0": restore.VolumeCSISnapshot}, methods,
		"Velero's volume information, as restoregraph reads it")

	// Velero's restore.
	vc, vcCSI := csiCluster(t, storage)
	vv, err := vc.StartVelero(ctx, s3srv, csiOn)
	require.NoError(t, err)
	veleroPhase(t, vc, veleroBackups, name, "Completed")
	start := time.Now()
	out, err = vv.Run(ctx, "restore", "create", "velero-csi", "--from-backup", name, "--wait")
	require.NoError(t, err, out)
	require.Equal(t, "Completed", veleroPhase(t, vc, veleroRestores, "velero-csi", "Completed", "PartiallyFailed", "Failed"), "velero restore:\n%s", vv.Log())
	assertVolumesHold(t, vc, vcCSI, "data", files)
	t.Logf("Velero: the restore Completed, every claim Bound and its Pods made in %s", time.Since(start).Round(time.Millisecond))
	vc.StopVelero()
	vc.Stop()

	// restoregraph's command, and its controller, in a cluster where Velero runs with its
	// restore controllers off.
	rc, rcCSI := csiCluster(t, storage)
	rv, err := rc.StartVelero(ctx, s3srv, harness.VeleroOptions{Features: []string{"EnableCSI"},
		DisableControllers: harness.RestoreControllers})
	require.NoError(t, err)
	veleroPhase(t, rc, veleroBackups, name, "Completed")
	plugins := veleroWithPlugins(t, rv)
	start = time.Now()
	code, report, stderr := cliApart(t, "restore", "--from-backup", name, "--plugins", plugins, "--kubeconfig", rc.Kubeconfig, "--restore-name", "rg-csi", "-o", "json")
	took := time.Since(start)
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, `"plugin address"`, "go-plugin's debug records are not passed on")
	assertVolumesHold(t, rc, rcCSI, "data", files)
	t.Logf("restoregraph: every claim Bound and its Pods made in %s", took.Round(time.Millisecond))
	assertPodsAfterClaims(t, report)

	// The controller runs as the chart's ServiceAccount, with its RBAC alone.
	runController(t, rc, plugins, controller.Config{Identity: "csi", Logger: slog.New(slog.DiscardHandler)}, "KUBECONFIG="+rc.Kubeconfig)
	dyn, err := dynamic.NewForConfig(rc.Config)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(rc.Config)
	require.NoError(t, err)
	out, err = rv.Run(ctx, "restore", "create", "ctl-csi", "--from-backup", name, "--namespace-mappings", "data:data-ctl", "--restore-volumes", "--wait")
	require.NoError(t, err, out)
	require.Equal(t, "Completed", veleroPhase(t, rc, veleroRestores, "ctl-csi", "Completed", "PartiallyFailed", "Failed", "FailedValidation"))
	assertVolumesHold(t, rc, rcCSI, "data-ctl", files)

	// No VolumeSnapshotClass of the driver in the target, and none restored: Velero's
	// content action gives each content the target's class of its driver, here none, and
	// the CSI snapshotter takes a content without one (a class holds only credentials for
	// it), so every claim is Bound holding its file.
	classes := dyn.Resource(schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotclasses"})
	require.NoError(t, classes.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	code, _, stderr = cliApart(t, "restore", "--from-backup", name, "--plugins", plugins, "--kubeconfig", rc.Kubeconfig,
		"--restore-name", "rg-noclass", "--namespace-mappings", "data:data-noclass",
		"--exclude-resources", "volumesnapshotclasses.snapshot.storage.k8s.io", "-o", "json")
	require.Equal(t, 0, code, stderr)
	assertVolumesHold(t, rc, rcCSI, "data-noclass", files)
	left, err := classes.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, left.Items, "the restore made no VolumeSnapshotClass")

	// The driver no longer has the snapshot of uploads: that claim fails, naming its
	// VolumeSnapshot and what the CSI snapshotter recorded, its Pod is not made, and the
	// rest is restored.
	snapshots := dyn.Resource(schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"})
	uploads, err := cs.CoreV1().PersistentVolumeClaims("data-ctl").Get(ctx, "uploads", metav1.GetOptions{})
	require.NoError(t, err)
	vs, err := snapshots.Namespace("data-ctl").Get(ctx, uploads.Spec.DataSource.Name, metav1.GetOptions{})
	require.NoError(t, err)
	handle, _, _ := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName")
	vsc, err := dyn.Resource(schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotcontents"}).
		Get(ctx, handle, metav1.GetOptions{})
	require.NoError(t, err)
	handle, _, _ = unstructured.NestedString(vsc.Object, "status", "snapshotHandle")
	require.NotEmpty(t, handle)
	require.NoError(t, os.RemoveAll(filepath.Join(storage, "snapshots", handle)))
	code, report, stderr = cliApart(t, "restore", "--from-backup", name, "--plugins", plugins, "--kubeconfig", rc.Kubeconfig,
		"--restore-name", "rg-gone", "--namespace-mappings", "data:data-gone", "--item-timeout", "30s", "-o", "json")
	require.Equal(t, 1, code, stderr)
	var rep struct {
		Objects []restore.ObjectResult `json:"objects"`
	}
	require.NoError(t, json.Unmarshal([]byte(report), &rep))
	results := map[string]restore.ObjectResult{}
	for _, o := range rep.Objects {
		results[o.Resource+"/"+o.Name] = o
	}
	t.Logf("the claim whose snapshot is gone: %s", results["persistentvolumeclaims/uploads"].Reason)
	assert.Equal(t, restore.Failed, results["persistentvolumeclaims/uploads"].Status)
	assert.Contains(t, results["persistentvolumeclaims/uploads"].Reason, "not Bound (phase is Pending; its VolumeSnapshot data-gone/")
	assert.Contains(t, results["persistentvolumeclaims/uploads"].Reason, handle, "what the CSI snapshotter recorded names the snapshot")
	assert.Equal(t, restore.Restored, results["persistentvolumeclaims/data-db-0"].Status)
	for key, o := range results {
		switch {
		case strings.HasPrefix(key, "pods/web-"):
			assert.Equal(t, restore.Failed, o.Status, "%s waited for uploads: %s", key, o.Reason)
		case strings.HasPrefix(key, "pods/db-"): // the StatefulSet's controller may make it first
			assert.Contains(t, []restore.Status{restore.Restored, restore.Adopted}, o.Status, key)
		}
	}
	assertVolumesHold(t, rc, rcCSI, "data-gone", map[string]string{"data-db-0": files["data-db-0"]})
}

// assertPodsAfterClaims checks, from a restore's JSON report, that each Pod that mounts
// a claim was made after the claim was ready (Bound).
func assertPodsAfterClaims(t *testing.T, report string) {
	t.Helper()
	var rep struct {
		Objects []restore.ObjectResult `json:"objects"`
	}
	require.NoError(t, json.Unmarshal([]byte(report), &rep))
	ready := map[string]time.Time{}
	for _, o := range rep.Objects {
		if o.Resource == "persistentvolumeclaims" {
			require.Equal(t, restore.Restored, o.Status, "claim %s", o.Name)
			ready[o.Name] = o.Ready
		}
	}
	require.Len(t, ready, 2)
	mounts := map[string]string{"db-": "data-db-0", "web-": "uploads"}
	checked := 0
	for _, o := range rep.Objects {
		for prefix, claim := range mounts {
			if o.Resource == "pods" && strings.HasPrefix(o.Name, prefix) && o.Status == restore.Restored {
				assert.False(t, o.Created.Before(ready[claim]), fmt.Sprintf("Pod %s made after claim %s was Bound", o.Name, claim))
				checked++
			}
		}
	}
	assert.Positive(t, checked, "Pods mount the claims")
}

// diskApp makes namespace ns with a claim bound to a PersistentVolume of dirdisks'
// (hostPath under root/volumes), a file written into it, and a Deployment that mounts
// it. It returns the file's content.
func diskApp(t testing.TB, c *harness.Cluster, root, ns string) string {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	dir := filepath.Join(root, "volumes", ns+"-data")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	content := "written into " + dir + " before the backup\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "content.txt"), []byte(content), 0o644))
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	_, err = cs.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: ns + "-data"},
		Spec: corev1.PersistentVolumeSpec{Capacity: size, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain, StorageClassName: "",
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: "data"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To(""),
			VolumeName: ns + "-data", Resources: corev1.VolumeResourceRequirements{Requests: size}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{"app": "db"}
	_, err = cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "db", Image: "example.io/db:1", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				Volumes:    []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	return content
}

// assertDiskHolds checks that claim ns/data is Bound to a PersistentVolume over a volume
// dirdisks made of a snapshot (not the backed-up one), holding content.
func assertDiskHolds(t *testing.T, c *harness.Cluster, root, ns, content string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	var path string
	require.Eventually(t, func() bool {
		pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "data", metav1.GetOptions{})
		if err != nil || pvc.Status.Phase != corev1.ClaimBound {
			return false
		}
		pv, err := cs.CoreV1().PersistentVolumes().Get(context.Background(), pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil || pv.Spec.HostPath == nil {
			return false
		}
		path = pv.Spec.HostPath.Path
		return true
	}, time.Minute, 200*time.Millisecond, "claim %s/data Bound", ns)
	assert.True(t, strings.HasPrefix(path, filepath.Join(root, "volumes", "from-")), "a volume made of the snapshot: %s", path)
	got, err := os.ReadFile(filepath.Join(path, "content.txt"))
	require.NoError(t, err)
	assert.Equal(t, content, string(got))
}

// TestVeleroNativeSnapshotRestoreSideBySide: the real Velero server backs up a namespace
// whose PersistentVolume is a volume of a VolumeSnapshotter plugin built with Velero's
// framework (dirdisks), taking a native snapshot through its VolumeSnapshotLocation; the
// backup is restored into fresh clusters by velero restore create, and by restoregraph
// restore, which reads the snapshot from Velero's records and runs the same plugin out
// of process, configured from the location as Velero configures it. On both sides the
// PersistentVolume points at a new volume made of the snapshot, holding the file, and
// its claim is Bound.
func TestVeleroNativeSnapshotRestoreSideBySide(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const name = "disk-data"
	s3srv, err := harness.StartS3(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(s3srv.Stop)
	root := t.TempDir() // the provider's disks, which every cluster reaches
	plugins := t.TempDir()
	aws, err := harness.VeleroPlugins()
	require.NoError(t, err)
	require.NoError(t, os.Symlink(filepath.Join(aws, "velero-plugin-for-aws"), filepath.Join(plugins, "velero-plugin-for-aws")))
	buildVeleroCommand(t, plugins, "dirdisks")
	withDisks := harness.VeleroOptions{PluginDir: plugins}
	location := func(v *harness.Velero) {
		out, err := v.Run(ctx, "snapshot-location", "create", "disks", "--provider", "example.io/dir-disks", "--config", "root="+root)
		require.NoError(t, err, out)
	}

	src := veleroCluster(t)
	content := diskApp(t, src, root, "disks")
	v, err := src.StartVelero(ctx, s3srv, withDisks)
	require.NoError(t, err)
	location(v)
	out, err := v.Run(ctx, "backup", "create", name, "--include-namespaces", "disks", "--snapshot-volumes", "--volume-snapshot-locations", "disks", "--wait")
	require.NoError(t, err, out)
	require.Equal(t, "Completed", veleroPhase(t, src, veleroBackups, name, "Completed", "PartiallyFailed", "Failed"), "velero backup:\n%s", v.Log())
	src.StopVelero()
	src.Stop()
	vols, err := velero.ReadVolumes(ctx, archive.DirSource(s3srv.Path("")), "backups/"+name+"/"+name+".tar.gz")
	require.NoError(t, err)
	require.Len(t, vols, 1)
	require.Equal(t, restore.VolumeNativeSnapshot, vols[0].Method)
	require.NotNil(t, vols[0].Snapshot)
	assert.Equal(t, "disks", vols[0].Snapshot.Location)

	// Velero's restore.
	vc := veleroCluster(t)
	vv, err := vc.StartVelero(ctx, s3srv, withDisks)
	require.NoError(t, err)
	location(vv)
	veleroPhase(t, vc, veleroBackups, name, "Completed")
	out, err = vv.Run(ctx, "restore", "create", "velero-disks", "--from-backup", name, "--wait")
	require.NoError(t, err, out)
	require.Equal(t, "Completed", veleroPhase(t, vc, veleroRestores, "velero-disks", "Completed", "PartiallyFailed", "Failed"), "velero restore:\n%s", vv.Log())
	assertDiskHolds(t, vc, root, "disks", content)
	vc.StopVelero()
	vc.Stop()

	// restoregraph's command, where Velero runs with its restore controllers off.
	rc := veleroCluster(t)
	rv, err := rc.StartVelero(ctx, s3srv, harness.VeleroOptions{PluginDir: plugins, DisableControllers: harness.RestoreControllers})
	require.NoError(t, err)
	veleroPhase(t, rc, veleroBackups, name, "Completed")
	code, text := cli(t, "restore", "--from-backup", name, "--plugins", plugins, "--kubeconfig", rc.Kubeconfig, "--restore-name", "rg-disks")
	require.Equal(t, 2, code, "no VolumeSnapshotLocation yet: %s", text)
	assert.Contains(t, text, `VolumeSnapshotLocation "disks": no such volume snapshot location: velero/disks`)
	location(rv)
	code, text = cli(t, "restore", "--from-backup", name, "--plugins", plugins, "--kubeconfig", rc.Kubeconfig, "--restore-name", "rg-disks")
	require.Equal(t, 0, code, text)
	assert.Contains(t, text, "Volume    PersistentVolumeClaim disks/data: native snapshot, restored")
	assertDiskHolds(t, rc, root, "disks", content)
}

// volumeMethods returns how the volume information of the backup name in s3srv says each
// claim's data was backed up, by the claim's name: what restoregraph reads of it.
func volumeMethods(t testing.TB, s3srv *harness.S3, name string) map[string]restore.VolumeMethod {
	t.Helper()
	vols, err := velero.ReadVolumes(context.Background(), archive.DirSource(s3srv.Path("")), "backups/"+name+"/"+name+".tar.gz")
	require.NoError(t, err)
	methods := map[string]restore.VolumeMethod{}
	for _, vol := range vols {
		methods[vol.Claim] = vol.Method
	}
	return methods
}

// veleroRestore starts Velero in c, with opts, and restores the backup name with
// velero restore create --wait, as restore; it must end Completed. The server is left
// running. With opts.NodeAgent it waits first for the node-agent to run on each node.
func veleroRestore(t testing.TB, c *harness.Cluster, s3srv *harness.S3, opts harness.VeleroOptions, name, restore string) {
	t.Helper()
	ctx := context.Background()
	v, err := c.StartVelero(ctx, s3srv, opts)
	require.NoError(t, err)
	veleroPhase(t, c, veleroBackups, name, "Completed")
	if opts.NodeAgent {
		podsRunning(t, c, "velero", 2)
	}
	out, err := v.Run(ctx, "restore", "create", restore, "--from-backup", name, "--wait")
	require.NoError(t, err, out)
	require.Equal(t, "Completed", veleroPhase(t, c, veleroRestores, restore, "Completed", "PartiallyFailed", "Failed"), "velero restore:\n%s", v.Log())
}

// movingCluster is csiCluster with the data mover of the harness moving data between
// its CSI storage and repo.
func movingCluster(t testing.TB, storage, repo string) (*harness.Cluster, *harness.CSI) {
	t.Helper()
	c, csi := csiCluster(t, storage)
	stop, err := c.StartDataMover(csi, repo)
	require.NoError(t, err)
	t.Cleanup(stop)
	return c, csi
}

// downloads returns the spec of each DataDownload in c, by its claim.
func downloads(t testing.TB, c *harness.Cluster) map[string]any {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.Config)
	require.NoError(t, err)
	list, err := dyn.Resource(schema.GroupVersionResource{Group: "velero.io", Version: "v2alpha1", Resource: "datadownloads"}).Namespace("velero").
		List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]any{}
	for _, dd := range list.Items {
		claim, _, _ := unstructured.NestedString(dd.Object, "spec", "targetVolume", "pvc")
		out[claim] = dd.Object["spec"]
		for _, l := range []string{"velero.io/restore-name", "velero.io/restore-uid", "velero.io/async-operation-id"} {
			assert.Contains(t, dd.GetLabels(), l, "DataDownload %s", dd.GetName())
		}
	}
	return out
}

// TestVeleroDataMovementRestoreSideBySide: the real Velero server backs up a namespace
// whose claims hold files with --snapshot-move-data, through CSI snapshots that a data
// mover of Velero's contract (the harness's, where Velero's node-agent would run) moves
// into a repository; the backup is restored into fresh clusters by velero restore create
// and by restoregraph restore (Velero's own actions from a plugin directory). Each makes
// the same DataDownloads, field by field; the mover fills a volume of each, every claim
// is Bound to it holding the file, and restoregraph makes each Pod after its claim and
// leaves none of the results Velero's DataUpload action wrote behind.
func TestVeleroDataMovementRestoreSideBySide(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const name = "moved-data"
	s3srv, err := harness.StartS3(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(s3srv.Stop)
	csiOn := harness.VeleroOptions{Features: []string{"EnableCSI"}}
	storage, repo := t.TempDir(), t.TempDir()

	src, srcCSI := movingCluster(t, storage, repo)
	files := csiApp(t, src, srcCSI, "data")
	v, err := src.StartVelero(ctx, s3srv, csiOn)
	require.NoError(t, err)
	out, err := v.Run(ctx, "backup", "create", name, "--include-namespaces", "data", "--snapshot-move-data", "--data-mover", harness.DataMoverName, "--wait")
	require.NoError(t, err, out)
	require.Equal(t, "Completed", veleroPhase(t, src, veleroBackups, name, "Completed", "PartiallyFailed", "Failed"), "velero backup:\n%s", v.Log())
	src.StopVelero()
	src.Stop()
	methods := volumeMethods(t, s3srv, name)
	assert.Equal(t, map[string]restore.VolumeMethod{"uploads": restore.VolumeDataMovement, "data-db-0": restore.VolumeDataMovement}, methods)

	vc, vcCSI := movingCluster(t, storage, repo)
	veleroRestore(t, vc, s3srv, csiOn, name, "velero-moved")
	assertVolumesHold(t, vc, vcCSI, "data", files)
	byVelero := downloads(t, vc)
	vc.StopVelero()
	vc.Stop()

	rc, rcCSI := movingCluster(t, storage, repo)
	rv, err := rc.StartVelero(ctx, s3srv, harness.VeleroOptions{Features: []string{"EnableCSI"},
		DisableControllers: harness.RestoreControllers})
	require.NoError(t, err)
	veleroPhase(t, rc, veleroBackups, name, "Completed")
	code, report, stderr := cliApart(t, "restore", "--from-backup", name, "--plugins", veleroWithPlugins(t, rv), "--kubeconfig", rc.Kubeconfig,
		"--restore-name", "rg-moved", "-o", "json")
	require.Equal(t, 0, code, stderr)
	assertVolumesHold(t, rc, rcCSI, "data", files)
	assertPodsAfterClaims(t, report)
	assert.Equal(t, byVelero, downloads(t, rc), "the DataDownloads Velero's restore makes")
	cs, err := kubernetes.NewForConfig(rc.Config)
	require.NoError(t, err)
	left, err := cs.CoreV1().ConfigMaps("velero").List(ctx, metav1.ListOptions{LabelSelector: "velero.io/resource-usage=DataUploadResult"})
	require.NoError(t, err)
	assert.Empty(t, left.Items, "the DataUpload results are deleted once the restore is done")
}

// podsRunning waits until n Pods of namespace ns run: Velero backs up the volumes of
// running Pods only.
func podsRunning(t testing.TB, c *harness.Cluster, ns string, n int) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	var why []string
	if !assert.Eventually(t, func() bool {
		pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		running := 0
		why = why[:0]
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
			for _, c := range p.Status.Conditions {
				if c.Status != corev1.ConditionTrue {
					why = append(why, p.Name+": "+c.Message)
				}
			}
		}
		return err == nil && running == n
	}, time.Minute, 200*time.Millisecond) {
		t.Fatalf("%d Pods of %s not running: %v", n, ns, why)
	}
}

// podVolumeRestores returns the spec of each PodVolumeRestore in c, by its Pod's name
// and volume, without what names the Pod's instance (its UID).
func podVolumeRestores(t testing.TB, c *harness.Cluster) map[string]any {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.Config)
	require.NoError(t, err)
	list, err := dyn.Resource(schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "podvolumerestores"}).Namespace("velero").
		List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]any{}
	for _, pvr := range list.Items {
		spec := pvr.Object["spec"].(map[string]any)
		pod := spec["pod"].(map[string]any)
		delete(pod, "uid")
		volume, _ := spec["volume"].(string)
		out[pod["name"].(string)+"/"+volume] = spec
		for _, l := range []string{"velero.io/restore-name", "velero.io/restore-uid", "velero.io/pod-uid"} {
			assert.Contains(t, pvr.GetLabels(), l, "PodVolumeRestore %s", pvr.GetName())
		}
		// Owned by the Restore it is labelled with: deleted with it.
		if refs := pvr.GetOwnerReferences(); assert.Len(t, refs, 1, "PodVolumeRestore %s is owned by its Restore", pvr.GetName()) {
			assert.Equal(t, "Restore", refs[0].Kind)
			assert.Equal(t, pvr.GetLabels()["velero.io/restore-name"], refs[0].Name)
			assert.Equal(t, pvr.GetLabels()["velero.io/restore-uid"], string(refs[0].UID))
		}
		phase, _, _ := unstructured.NestedString(pvr.Object, "status", "phase")
		assert.Equal(t, "Completed", phase, "PodVolumeRestore %s", pvr.GetName())
	}
	return out
}

// assertRestoreWaitEnds checks that each volume of each Pod in ns that Velero's
// restore-wait init container waits for holds the file it waits for: .velero/UID, UID
// its argument, the Restore's UID as plugins were told it, which the node-agent writes
// after the UID of the PodVolumeRestore's owner.
func assertRestoreWaitEnds(t *testing.T, c *harness.Cluster, csi *harness.CSI, ns string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	waiting := 0
	for _, p := range pods.Items {
		i := slices.IndexFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == "restore-wait" })
		if i < 0 {
			continue
		}
		waiting++
		require.NotEmpty(t, p.Spec.InitContainers[i].Args, "pod %s/%s: restore-wait's argument", ns, p.Name)
		uid := p.Spec.InitContainers[i].Args[0]
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			done := filepath.Join(csi.Volume(boundVolume(t, c, ns, v.PersistentVolumeClaim.ClaimName)), ".velero", uid)
			assert.FileExists(t, done, "pod %s/%s, volume %s: the file restore-wait waits for", ns, p.Name, v.Name)
		}
	}
	assert.Positive(t, waiting, "Pods of %s whose volumes are filled", ns)
}

// TestVeleroFileSystemRestoreSideBySide: the real Velero server backs up a namespace
// whose claims hold files by file-system backup (--default-volumes-to-fs-backup), a
// node-agent of Velero's contract (the harness's) copying each Pod volume into a
// repository; velero restore create and restoregraph restore (Velero's own actions from
// a plugin directory) each restore it into a fresh cluster. Each makes the same
// PodVolumeRestores, field by field, the node-agent fills each volume, every claim is
// Bound holding its file, and restoregraph reports each Pod done only once its volumes
// are filled.
func TestVeleroFileSystemRestoreSideBySide(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const name = "fs-backup"
	s3srv, err := harness.StartS3(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(s3srv.Stop)
	withAgent := harness.VeleroOptions{NodeAgent: true}
	storage, repo := t.TempDir(), t.TempDir()

	src, srcCSI := movingCluster(t, storage, repo)
	require.NoError(t, src.Schedule(ctx)) // Velero backs up the volumes of running Pods
	files := csiApp(t, src, srcCSI, "data")
	v, err := src.StartVelero(ctx, s3srv, withAgent)
	require.NoError(t, err)
	podsRunning(t, src, "data", 2)
	podsRunning(t, src, "velero", 2) // the node-agent, on each node
	out, err := v.Run(ctx, "backup", "create", name, "--include-namespaces", "data", "--default-volumes-to-fs-backup", "--wait")
	require.NoError(t, err, out)
	require.Equal(t, "Completed", veleroPhase(t, src, veleroBackups, name, "Completed", "PartiallyFailed", "Failed"), "velero backup:\n%s", v.Log())
	src.StopVelero()
	src.Stop()
	methods := volumeMethods(t, s3srv, name)
	require.Equal(t, map[string]restore.VolumeMethod{"uploads": restore.VolumeFileSystem, "data-db-0": restore.VolumeFileSystem}, methods)

	vc, vcCSI := movingCluster(t, storage, repo)
	require.NoError(t, vc.Schedule(ctx)) // the node-agent runs on each node
	veleroRestore(t, vc, s3srv, withAgent, name, "velero-fs")
	assertVolumesHold(t, vc, vcCSI, "data", files)
	assertRestoreWaitEnds(t, vc, vcCSI, "data")
	byVelero := podVolumeRestores(t, vc)
	vc.StopVelero() // its objects stay, read as another cluster's below

	rc, rcCSI := movingCluster(t, storage, repo)
	require.NoError(t, rc.Schedule(ctx))
	rv, err := rc.StartVelero(ctx, s3srv, harness.VeleroOptions{NodeAgent: true,
		DisableControllers: harness.RestoreControllers})
	require.NoError(t, err)
	veleroPhase(t, rc, veleroBackups, name, "Completed")
	podsRunning(t, rc, "velero", 2)
	code, report, stderr := cliApart(t, "restore", "--from-backup", name, "--plugins", veleroWithPlugins(t, rv), "--kubeconfig", rc.Kubeconfig,
		"--restore-name", "rg-fs", "-o", "json")
	require.Equal(t, 0, code, "%s\n%s", stderr, report)
	assertVolumesHold(t, rc, rcCSI, "data", files)
	assertRestoreWaitEnds(t, rc, rcCSI, "data")
	assertPodsAfterClaims(t, report)
	assert.Equal(t, byVelero, podVolumeRestores(t, rc), "the PodVolumeRestores Velero's restore makes")
	cs, err := kubernetes.NewForConfig(rc.Config)
	require.NoError(t, err)
	var seen []string
	if !assert.Eventually(t, func() bool {
		pods, err := cs.CoreV1().Pods("data").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		seen = seen[:0]
		adopted := 0
		for _, p := range pods.Items {
			owner := "none"
			if ref := metav1.GetControllerOf(&p); ref != nil {
				owner = ref.Kind + "/" + ref.Name
				adopted++
			}
			seen = append(seen, p.Name+" owned by "+owner)
		}
		return len(pods.Items) == 2 && adopted == 2
	}, 30*time.Second, 200*time.Millisecond) {
		t.Errorf("the two Pods restored before their controllers, adopted by them, and no more: %v", seen)
	}

	// Not recorded in Velero, its PodVolumeRestores would have no owner, which the
	// node-agent fails: refused before anything is written.
	code, _, stderr = cliApart(t, "restore", "--from-backup", name, "--plugins", veleroWithPlugins(t, rv), "--kubeconfig", rc.Kubeconfig,
		"--record-in-velero=false", "--namespace-mappings", "data:data-unrecorded")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "the restore must be recorded in Velero")
	_, err = cs.CoreV1().Namespaces().Get(ctx, "data-unrecorded", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "nothing written: %v", err)

	// Velero's objects read from another cluster where Velero runs (vc's, of the same
	// location; its server stopped, as one runs at a time): the restore is recorded
	// there, and begun in the target's Velero too, whose Restore owns the
	// PodVolumeRestores and whose UID the restore-wait init containers wait for.
	code, _, stderr = cliApart(t, "restore", "--from-backup", name, "--plugins", veleroWithPlugins(t, rv), "--kubeconfig", rc.Kubeconfig,
		"--source-kubeconfig", vc.Kubeconfig, "--restore-name", "rg-fs-apart", "--namespace-mappings", "data:data-apart")
	require.Equal(t, 0, code, stderr)
	assertVolumesHold(t, rc, rcCSI, "data-apart", files)
	assertRestoreWaitEnds(t, rc, rcCSI, "data-apart")
	podVolumeRestores(t, rc) // each owned by its Restore, Completed
	for _, c := range []*harness.Cluster{vc, rc} {
		assert.Equal(t, "Completed", veleroPhase(t, c, veleroRestores, "rg-fs-apart", "Completed", "PartiallyFailed", "Failed"))
	}
	vc.Stop()
}
