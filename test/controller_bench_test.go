package test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/restoregraph/restoregraph/test/harness"
)

// BenchmarkIntegrationVeleroRestores: 50 namespaces of a small application (a Deployment
// of 2 replicas, Services, ConfigMaps, a Secret, a ServiceAccount), backed up by the real
// Velero server in one backup, then restored as 50 Restores created at once, one per
// namespace: by Velero's restore controller into a fresh cluster, and by restoregraph's
// controller (two processes, Velero's server running with its restore controllers off)
// into another. It reports the time from the first Restore's creation until all are
// Completed, for each, and their ratio. restoregraph's processes then carry out the 50
// three times more under other names; of each it reports the goroutines before, after 50
// and after 200 Restores (a restore that leaves goroutines or watches behind grows them
// by as many each time; the goroutine profile is logged when they grow), and its
// resident memory after 50 and after 200.
func BenchmarkIntegrationVeleroRestores(b *testing.B) {
	const namespaces = 50
	for range b.N {
		ctx := context.Background()
		s, err := harness.StartS3(ctx, b.TempDir())
		require.NoError(b, err)
		defer s.Stop()
		names := appNamespacesWithVelero(b, s, "apps", namespaces)

		vc := veleroCluster(b)
		_, err = vc.StartVelero(ctx, s, harness.VeleroOptions{})
		require.NoError(b, err)
		veleroPhase(b, vc, veleroBackups, "apps", "Completed")
		veleroTook := createRestoresAndWait(b, vc, "apps", "restore-", names)
		vc.StopVelero()
		vc.Stop()

		rc := veleroCluster(b)
		v, err := rc.StartVelero(ctx, s, harness.VeleroOptions{DisableControllers: harness.RestoreControllers})
		require.NoError(b, err)
		veleroPhase(b, rc, veleroBackups, "apps", "Completed")
		var metrics []string
		for _, id := range []string{"replica-a", "replica-b"} {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(b, err)
			addr := l.Addr().String()
			l.Close()
			startReplica(b, rc, id, nil, "--plugins", v.PluginDir(), "--metrics-address", addr)
			metrics = append(metrics, addr)
		}
		before := make([]float64, len(metrics))
		for i, addr := range metrics {
			require.NoError(b, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				resp, err := http.Get("http://" + addr + "/readyz")
				if err != nil {
					return false, nil
				}
				resp.Body.Close()
				return resp.StatusCode == http.StatusOK, nil
			}))
			before[i] = metricOf(b, addr, "go_goroutines")
		}
		rgTook := createRestoresAndWait(b, rc, "apps", "restore-", names)
		// Then the same 50 three times more, under other names (the objects are there: each
		// is found by its source UID): a process that keeps something per restore grows by
		// it, 200 Restores in all.
		settle := func() { time.Sleep(3 * time.Second) } // what a restore ends settles: its Lease released, its plugin calls done
		settle()
		after50, rss50 := make([]float64, len(metrics)), make([]float64, len(metrics))
		for i, addr := range metrics {
			after50[i], rss50[i] = metricOf(b, addr, "go_goroutines"), metricOf(b, addr, "process_resident_memory_bytes")
		}
		for round := range 3 {
			createRestoresAndWait(b, rc, "apps", fmt.Sprintf("again-%d-", round), names)
		}
		settle()
		for i, addr := range metrics {
			after200, rss200 := metricOf(b, addr, "go_goroutines"), metricOf(b, addr, "process_resident_memory_bytes")
			b.ReportMetric(before[i], fmt.Sprintf("replica%d-goroutines-before", i+1))
			b.ReportMetric(after50[i], fmt.Sprintf("replica%d-goroutines-after-50", i+1))
			b.ReportMetric(after200, fmt.Sprintf("replica%d-goroutines-after-200", i+1))
			b.ReportMetric(rss50[i]/(1<<20), fmt.Sprintf("replica%d-MiB-after-50", i+1))
			b.ReportMetric(rss200/(1<<20), fmt.Sprintf("replica%d-MiB-after-200", i+1))
			if after200 > after50[i] {
				resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
				require.NoError(b, err)
				profile, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				b.Logf("replica %d: %.0f goroutines after 50 Restores, %.0f after 200:\n%s", i+1, after50[i], after200, profile)
			}
		}
		b.ReportMetric(namespaces, "restores")
		b.ReportMetric(veleroTook.Seconds(), "velero-s")
		b.ReportMetric(rgTook.Seconds(), "restoregraph-s")
		b.ReportMetric(veleroTook.Seconds()/rgTook.Seconds(), "speedup")
		b.Logf("%d Restores created at once: Velero's controller %s, restoregraph's two processes %s (%.1fx)",
			namespaces, veleroTook.Round(10*time.Millisecond), rgTook.Round(10*time.Millisecond), veleroTook.Seconds()/rgTook.Seconds())
	}
}

// appNamespacesWithVelero makes n namespaces app-NN of a small application in a cluster
// of its own, and has the real Velero server back them up into s as backup name.
func appNamespacesWithVelero(b *testing.B, s *harness.S3, name string, n int) []string {
	b.Helper()
	ctx := context.Background()
	src := veleroCluster(b)
	defer src.Stop()
	cs, err := kubernetes.NewForConfig(src.Config)
	require.NoError(b, err)
	var names []string
	for i := range n {
		ns := fmt.Sprintf("app-%02d", i)
		names = append(names, ns)
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(b, err)
		labels := map[string]string{"app": "web"}
		for _, cm := range []string{"settings", "features", "routes"} {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm},
				Data: map[string]string{"value": strings.Repeat(cm, 20)}}, metav1.CreateOptions{})
			require.NoError(b, err)
		}
		_, err = cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "credentials"},
			StringData: map[string]string{"password": "not-a-real-one"}}, metav1.CreateOptions{})
		require.NoError(b, err)
		_, err = cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{})
		require.NoError(b, err)
		for _, svc := range []string{"web", "web-internal"} {
			_, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svc},
				Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}, metav1.CreateOptions{})
			require.NoError(b, err)
		}
		_, err = cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{ServiceAccountName: "web", Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}},
			metav1.CreateOptions{})
		require.NoError(b, err)
	}
	time.Sleep(5 * time.Second) // the controllers make the ReplicaSets and Pods
	v, err := src.StartVelero(ctx, s, harness.VeleroOptions{})
	require.NoError(b, err)
	out, err := v.Run(ctx, "backup", "create", name, "--include-namespaces", strings.Join(names, ","), "--wait")
	require.NoError(b, err, out)
	require.Equal(b, "Completed", veleroPhase(b, src, veleroBackups, name, "Completed", "PartiallyFailed", "Failed"))
	src.StopVelero()
	return names
}

// createRestoresAndWait creates one Restore of backup per namespace, named prefix and the
// namespace ("" for one of the whole backup, prefix "all"), at once, and returns the time
// until every one is Completed.
func createRestoresAndWait(b *testing.B, c *harness.Cluster, backup, prefix string, namespaces []string) time.Duration {
	b.Helper()
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(c.Config)
	require.NoError(b, err)
	restores := dyn.Resource(veleroRestores).Namespace("velero")
	started := time.Now()
	for _, ns := range namespaces {
		name, spec := prefix+ns, map[string]any{"backupName": backup, "includedNamespaces": []any{ns}}
		if ns == "" {
			name, spec = prefix+"all", map[string]any{"backupName": backup}
		}
		_, err := restores.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "velero.io/v1", "kind": "Restore",
			"metadata": map[string]any{"name": name, "namespace": "velero"}, "spec": spec}}, metav1.CreateOptions{})
		require.NoError(b, err)
	}
	var phases map[string]int
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := restores.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		phases = map[string]int{}
		for _, r := range list.Items {
			if !strings.HasPrefix(r.GetName(), prefix) {
				continue
			}
			phase, _, _ := unstructured.NestedString(r.Object, "status", "phase")
			phases[phase]++
		}
		ended := phases["Completed"] + phases["PartiallyFailed"] + phases["Failed"] + phases["FailedValidation"]
		return ended == len(namespaces), nil
	})
	took := time.Since(started)
	require.NoError(b, err, "phases: %v", phases)
	require.Equal(b, len(namespaces), phases["Completed"], "phases: %v", phases)
	return took
}

// metricOf reads one unlabelled metric from a Prometheus endpoint.
func metricOf(b testing.TB, addr, name string) float64 {
	b.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(b, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if value, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(value, 64)
			require.NoError(b, err)
			return f
		}
	}
	require.Failf(b, "no such metric", "%s at %s", name, addr)
	return 0
}

// BenchmarkIntegrationVeleroRestoreLarge: one Restore of 100,000 application objects
// (bench/workload's apps: namespaces of Deployments, ReplicaSets, Pods, Services,
// ConfigMaps, Secrets, ServiceAccounts and RoleBindings), carried out by one restoregraph
// controller process into a real API server, the backup in an S3 bucket where Velero
// keeps backups and found there by Velero's backup sync. The tarball is bench/workload's
// with a velero-backup.json uploadApps writes: Velero did not write this one. It reports the time until Completed, the objects
// per second, and the process's peak resident memory (VmHWM).
func BenchmarkIntegrationVeleroRestoreLarge(b *testing.B) {
	const objects = 100_000
	ctx := context.Background()
	for range b.N {
		s, err := harness.StartS3(ctx, b.TempDir())
		require.NoError(b, err)
		defer s.Stop()
		n, _ := uploadApps(b, s, "apps", objects)

		c := startCluster(b, harness.Options{ServiceCIDR: "10.96.0.0/16"})
		v, err := c.StartVelero(ctx, s, harness.VeleroOptions{DisableControllers: harness.RestoreControllers})
		require.NoError(b, err)
		veleroPhase(b, c, veleroBackups, "apps", "Completed")
		controller, _ := startReplica(b, c, "replica-a", nil, "--plugins", v.PluginDir())
		took := createRestoresAndWait(b, c, "apps", "restore-", []string{""})
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", controller.Process.Pid))
		require.NoError(b, err)
		var peakKiB float64
		for line := range strings.Lines(string(status)) {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				peakKiB, err = strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
				require.NoError(b, err)
			}
		}
		require.Positive(b, peakKiB)
		b.ReportMetric(float64(n), "objects")
		b.ReportMetric(took.Seconds(), "restore-s")
		b.ReportMetric(float64(n)/took.Seconds(), "objects/s")
		b.ReportMetric(peakKiB/1024, "peak-MiB")
		b.Logf("%d objects through the controller: %s, %.0f objects/s, peak RSS %.0f MiB", n, took.Round(100*time.Millisecond), float64(n)/took.Seconds(), peakKiB/1024)
	}
}
