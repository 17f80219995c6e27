package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/restoregraph/restoregraph/test/harness"
)

// BenchmarkIntegrationVeleroVolumes restores a backup the real Velero server wrote of a
// StatefulSet whose claims (10, 100) hold files, by CSI snapshots taken through the real
// CSI sidecars, twice, each into a fresh cluster: with `velero restore create --wait`
// and with `restoregraph restore --from-backup` (Velero's actions among the plugins).
// Each side's time runs from the command's start until every claim is Bound and every
// Pod exists (Velero's restore ends before its claims are bound); it reports both and
// their ratio.
func BenchmarkIntegrationVeleroVolumes(b *testing.B) {
	for _, claims := range []int{10, 100} {
		b.Run(fmt.Sprintf("claims=%d", claims), func(b *testing.B) {
			for range b.N {
				benchVolumes(b, claims)
			}
		})
	}
}

func benchVolumes(b *testing.B, claims int) {
	ctx := context.Background()
	name := fmt.Sprintf("claims-%d", claims)
	s3srv, err := harness.StartS3(ctx, b.TempDir())
	require.NoError(b, err)
	defer s3srv.Stop()
	csiOn := harness.VeleroOptions{Features: []string{"EnableCSI"}}
	storage := b.TempDir()

	src, srcCSI := csiCluster(b, storage)
	statefulClaims(b, src, srcCSI, "data", claims)
	v, err := src.StartVelero(ctx, s3srv, csiOn)
	require.NoError(b, err)
	out, err := v.Run(ctx, "backup", "create", name, "--include-namespaces", "data", "--snapshot-volumes", "--wait")
	require.NoError(b, err, out)
	require.Equal(b, "Completed", veleroPhase(b, src, veleroBackups, name, "Completed", "PartiallyFailed", "Failed"))
	src.StopVelero()
	src.Stop()

	vc, _ := csiCluster(b, storage)
	vv, err := vc.StartVelero(ctx, s3srv, csiOn)
	require.NoError(b, err)
	veleroPhase(b, vc, veleroBackups, name, "Completed")
	b.ResetTimer()
	start := time.Now()
	out, err = vv.Run(ctx, "restore", "create", "velero-"+name, "--from-backup", name, "--wait")
	require.NoError(b, err, out)
	allBound(b, vc, "data", claims)
	byVelero := time.Since(start)
	b.StopTimer()
	vc.StopVelero()
	vc.Stop()

	rc, _ := csiCluster(b, storage)
	rv, err := rc.StartVelero(ctx, s3srv, harness.VeleroOptions{Features: []string{"EnableCSI"},
		DisableControllers: harness.RestoreControllers})
	require.NoError(b, err)
	veleroPhase(b, rc, veleroBackups, name, "Completed")
	plugins := veleroWithPlugins(b, rv)
	b.StartTimer()
	start = time.Now()
	code, _, stderr := cliApart(b, "restore", "--from-backup", name, "--plugins", plugins, "--kubeconfig", rc.Kubeconfig, "--restore-name", "rg-"+name)
	require.Equal(b, 0, code, stderr)
	allBound(b, rc, "data", claims)
	byRestoregraph := time.Since(start)
	b.ReportMetric(byVelero.Seconds(), "velero-s")
	b.ReportMetric(byRestoregraph.Seconds(), "restoregraph-s")
	b.ReportMetric(byVelero.Seconds()/byRestoregraph.Seconds(), "velero/restoregraph")
}

// statefulClaims makes namespace ns with a StatefulSet of n replicas, each with a claim
// of the CSI class, and once they are Bound writes a file into each volume.
func statefulClaims(t testing.TB, c *harness.Cluster, csi *harness.CSI, ns string, n int) {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	claim := corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		StorageClassName: ptr.To(harness.CSIStorageClass),
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}
	labels := map[string]string{"app": "db"}
	_, err = cs.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(n)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "db", Image: "example.io/db:1", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: claim}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for i := range n {
		handle := boundVolume(t, c, ns, fmt.Sprintf("data-db-%d", i))
		require.NoError(t, os.WriteFile(filepath.Join(csi.Volume(handle), "content.txt"), []byte(fmt.Sprintf("volume %d\n", i)), 0o644))
	}
}

// allBound waits until n claims of ns are Bound and n Pods exist.
func allBound(t testing.TB, c *harness.Cluster, ns string, n int) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 20*time.Minute, true, func(ctx context.Context) (bool, error) {
		claims, err := cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		bound := 0
		for _, c := range claims.Items {
			if c.Status.Phase == corev1.ClaimBound {
				bound++
			}
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && bound == n && len(pods.Items) == n, nil
	})
	require.NoError(t, err, "%d claims of %s Bound and %d Pods", n, ns, n)
}
