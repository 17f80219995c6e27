package test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/restoregraph/restoregraph/test/harness"
)

// TestControllerCarriesOutVeleroRestores: Velero's server runs with its restore
// controllers off and restoregraph's controller in their place. velero restore create
// --from-backup of the backup Velero wrote completes through restoregraph: the objects
// are in the cluster, velero restore describe --details lists them, velero restore logs
// shows the restore's report. A Restore with a field restoregraph does not do fails
// validation, naming it.
func TestControllerCarriesOutVeleroRestores(t *testing.T) {
	t.Parallel() // its own control plane and S3 server: beside the other tests that have theirs
	ctx := context.Background()
	const name = fixtureBackup
	s3srv, vc, v, _ := veleroWithFixture(t, harness.VeleroOptions{Features: []string{"EnableAPIGroupVersions"},
		DisableControllers: harness.RestoreControllers})

	bin, err := cliBinary()
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	metrics := l.Addr().String()
	l.Close()
	controller := exec.Command(bin, "controller", "--plugins", v.PluginDir(), "--kubeconfig", vc.Kubeconfig, "-v", "--metrics-address", metrics)
	var logs syncBuffer
	controller.Stdout, controller.Stderr = &logs, &logs
	controller.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, controller.Start())
	t.Cleanup(func() { controller.Process.Signal(syscall.SIGTERM); controller.Wait() })

	out, err := v.Run(ctx, "restore", "create", "shop-copy", "--from-backup", name, "--include-namespaces", "shop",
		"--namespace-mappings", "shop:shop-copy", "--wait")
	require.NoError(t, err, out)
	phase := veleroPhase(t, vc, veleroRestores, "shop-copy", "Completed", "PartiallyFailed", "Failed", "FailedValidation")
	require.Equal(t, "Completed", phase, "controller:\n%s", logs.String())

	dyn, err := dynamic.NewForConfig(vc.Config)
	require.NoError(t, err)
	web, err := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("shop-copy").
		Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "shop-copy", web.GetLabels()["velero.io/restore-name"])
	r, err := dyn.Resource(veleroRestores).Namespace("velero").Get(ctx, "shop-copy", metav1.GetOptions{})
	require.NoError(t, err)
	total, _, _ := unstructured.NestedInt64(r.Object, "status", "progress", "totalItems")
	restored, _, _ := unstructured.NestedInt64(r.Object, "status", "progress", "itemsRestored")
	assert.Positive(t, total)
	assert.Equal(t, total, restored, "status.progress")
	start, _, _ := unstructured.NestedString(r.Object, "status", "startTimestamp")
	assert.NotEmpty(t, start)

	describe, err := v.Run(ctx, "restore", "describe", "shop-copy", "--details")
	require.NoError(t, err, describe)
	t.Logf("velero restore describe --details:\n%s", describe)
	assert.Regexp(t, `Phase:\s+\S*Completed`, describe)
	assert.Regexp(t, fmt.Sprintf(`Items restored:\s+%d\n`, restored), describe, "as status.progress says")
	assert.Contains(t, describe, "shop-copy/web(created)")
	vlogs, err := v.Run(ctx, "restore", "logs", "shop-copy")
	require.NoError(t, err, vlogs)
	assert.Regexp(t, `msg=restored restore=shop-copy resource=deployments.apps version=v1 namespace=shop name=web targetNamespace=shop-copy`, vlogs, "a line per object")

	// Operable: health, readiness, metrics, Events on the Restore.
	for _, path := range []string{"/healthz", "/readyz", "/debug/pprof/goroutine?debug=1"} {
		resp, err := http.Get("http://" + metrics + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	resp, err := http.Get("http://" + metrics + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), `restoregraph_restores_total{phase="Completed"} 1`)
	assert.Contains(t, string(body), `restoregraph_restore_objects_total{resource="deployments.apps",status="Restored"} 1`)
	assert.Contains(t, string(body), "restoregraph_restore_duration_seconds_count 1")
	assert.Regexp(t, `rest_client_requests_total\{code="201",host="127\.0\.0\.1:\d+",method="POST"\} [1-9]`, string(body), "the client's creates")
	assert.Contains(t, string(body), `rest_client_request_duration_seconds_count{host=`)
	require.Eventually(t, func() bool {
		evs, err := kubernetes.NewForConfigOrDie(vc.Config).CoreV1().Events("velero").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=shop-copy"})
		if err != nil {
			return false
		}
		reasons := map[string]bool{}
		for _, e := range evs.Items {
			reasons[e.Reason] = true
		}
		return reasons["Taken"] && reasons["Completed"]
	}, 30*time.Second, 200*time.Millisecond, "Events on the Restore: Taken, Completed")

	// A field restoregraph does not do: FailedValidation, naming it.
	_, err = dyn.Resource(veleroRestores).Namespace("velero").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "velero.io/v1", "kind": "Restore", "metadata": map[string]any{"name": "with-policy", "namespace": "velero"},
		"spec": map[string]any{"backupName": name, "resourcePolicy": map[string]any{"kind": "configmap", "name": "volume-policy"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	phase = veleroPhase(t, vc, veleroRestores, "with-policy", "Completed", "PartiallyFailed", "Failed", "FailedValidation")
	require.Equal(t, "FailedValidation", phase)
	r, err = dyn.Resource(veleroRestores).Namespace("velero").Get(ctx, "with-policy", metav1.GetOptions{})
	require.NoError(t, err)
	errs, _, _ := unstructured.NestedStringSlice(r.Object, "status", "validationErrors")
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0], "spec.resourcePolicy")

	// A namespace mapped onto kube-system, which the controller protects by default:
	// FailedValidation, naming the mapping, and nothing written there.
	_, err = dyn.Resource(veleroRestores).Namespace("velero").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "velero.io/v1", "kind": "Restore", "metadata": map[string]any{"name": "onto-kube-system", "namespace": "velero"},
		"spec": map[string]any{"backupName": name, "namespaceMapping": map[string]any{"shop": "kube-system"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Equal(t, "FailedValidation", veleroPhase(t, vc, veleroRestores, "onto-kube-system", "Completed", "PartiallyFailed", "Failed", "FailedValidation"))
	r, err = dyn.Resource(veleroRestores).Namespace("velero").Get(ctx, "onto-kube-system", metav1.GetOptions{})
	require.NoError(t, err)
	errs, _, _ = unstructured.NestedStringSlice(r.Object, "status", "validationErrors")
	assert.Equal(t, []string{"spec.namespaceMapping: shop maps onto kube-system, a protected namespace the controller restores nothing into"}, errs)
	cms, err := kubernetes.NewForConfigOrDie(vc.Config).CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "velero.io/restore-name=onto-kube-system"})
	require.NoError(t, err)
	assert.Empty(t, cms.Items)

	// velero restore delete: the Restore goes once its files are removed from the bucket,
	// as Velero's restore controller does it.
	files := func() []string {
		list, err := s3srv.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s3srv.Bucket), Prefix: aws.String("restores/shop-copy/")})
		require.NoError(t, err)
		var keys []string
		for _, o := range list.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		return keys
	}
	require.Len(t, files(), 3, "results, resource list and log")
	out, err = v.Run(ctx, "restore", "delete", "shop-copy", "--confirm")
	require.NoError(t, err, out)
	require.Eventually(t, func() bool {
		_, err := dyn.Resource(veleroRestores).Namespace("velero").Get(ctx, "shop-copy", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, time.Minute, 200*time.Millisecond, "the Restore is deleted:\n%s", &logs)
	assert.Empty(t, files(), "its files are removed from the bucket")
}

// syncBuffer is a buffer a process writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestControllerTakesOverADeadReplica: two controller processes stand for each Restore;
// the one holding its Lease carries it out. SIGKILLed mid-restore, its Lease expires and
// the other takes the Restore over, runs it again, and completes it: every object
// restored once, Velero's record whole.
func TestControllerTakesOverADeadReplica(t *testing.T) {
	t.Parallel() // its own control plane and S3 server: beside the other tests that have theirs
	ctx := context.Background()
	const name = fixtureBackup
	_, vc, v, _ := veleroWithFixture(t, harness.VeleroOptions{DisableControllers: harness.RestoreControllers})
	start := func(identity string, extra ...string) (*exec.Cmd, *syncBuffer) {
		return startReplica(t, vc, identity, nil, append([]string{"--plugins", v.PluginDir()}, extra...)...)
	}
	// The first is slowed by its client's rate limit, so that it is killed mid-restore.
	a, aLogs := start("replica-a", "--client-qps", "8", "--client-burst", "1")
	out, err := v.Run(ctx, "restore", "create", "taken-over", "--from-backup", name, "--include-namespaces", "shop",
		"--namespace-mappings", "shop:shop-taken-over")
	require.NoError(t, err, out)
	dyn, err := dynamic.NewForConfig(vc.Config)
	require.NoError(t, err)
	restoreObj := func() *unstructured.Unstructured {
		r, err := dyn.Resource(veleroRestores).Namespace("velero").Get(ctx, "taken-over", metav1.GetOptions{})
		require.NoError(t, err)
		return r
	}
	require.Eventually(t, func() bool {
		r := restoreObj()
		done, _, _ := unstructured.NestedInt64(r.Object, "status", "progress", "itemsRestored")
		return r.GetAnnotations()["restoregraph.dev/taken-by"] == "replica-a" && done > 0
	}, 2*time.Minute, 100*time.Millisecond, "replica-a takes the restore and makes progress:\n%s", aLogs)
	_, bLogs := start("replica-b")
	time.Sleep(time.Second) // b stands for the Restore
	require.NoError(t, a.Process.Signal(syscall.SIGKILL))
	r := restoreObj()
	killedAt, _, _ := unstructured.NestedInt64(r.Object, "status", "progress", "itemsRestored")
	total, _, _ := unstructured.NestedInt64(r.Object, "status", "progress", "totalItems")
	require.Less(t, killedAt, total, "killed mid-restore")

	phase := veleroPhase(t, vc, veleroRestores, "taken-over", "Completed", "PartiallyFailed", "Failed", "FailedValidation")
	require.Equal(t, "Completed", phase, "replica-b:\n%s", bLogs)
	r = restoreObj()
	assert.Equal(t, "replica-b", r.GetAnnotations()["restoregraph.dev/taken-by"])
	restored, _, _ := unstructured.NestedInt64(r.Object, "status", "progress", "itemsRestored")
	assert.Equal(t, total, restored)
	errs, _, _ := unstructured.NestedInt64(r.Object, "status", "errors")
	assert.Zero(t, errs)
	assert.Contains(t, bLogs.String(), "restore taken over")
	t.Logf("killed after %d of %d objects; taken over and completed by replica-b", killedAt, total)

	// Every object once: each carries the restore's label and its source UID, and no
	// source UID is there twice.
	seen := map[string]string{}
	for _, gvr := range []schema.GroupVersionResource{{Version: "v1", Resource: "pods"}, {Version: "v1", Resource: "configmaps"},
		{Version: "v1", Resource: "services"}, {Group: "apps", Version: "v1", Resource: "deployments"}} {
		list, err := dyn.Resource(gvr).Namespace("shop-taken-over").List(ctx, metav1.ListOptions{LabelSelector: "velero.io/restore-name=taken-over"})
		require.NoError(t, err)
		for _, o := range list.Items {
			src := o.GetAnnotations()["restoregraph.dev/source-uid"]
			require.NotEmpty(t, src, "%s %s", gvr.Resource, o.GetName())
			require.NotContains(t, seen, src, "%s %s and %s", gvr.Resource, o.GetName(), seen[src])
			seen[src] = o.GetName()
		}
	}
	assert.NotEmpty(t, seen)
	describe, err := v.Run(ctx, "restore", "describe", "taken-over", "--details")
	require.NoError(t, err, describe)
	assert.Contains(t, describe, "shop-taken-over/web(created)")
}

// startReplica starts a controller process of the given identity on cluster vc, with a
// Lease of 6 s, its metrics on a free port, env added to its environment and extra
// flags; it runs as the chart's ServiceAccount, with the chart's RBAC alone (applied to
// vc on first use). It is killed when the test ends, and when the test process dies.
func startReplica(t testing.TB, vc *harness.Cluster, identity string, env []string, extra ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	asChart(t, vc)
	bin, err := cliBinary()
	require.NoError(t, err)
	cmd := exec.Command(bin, append([]string{"controller", "--kubeconfig", vc.Kubeconfig, "--as", chartAccount, "-v",
		"--identity", identity, "--lease-duration", "6s", "--metrics-address", "127.0.0.1:0"}, extra...)...)
	cmd.Env = append(os.Environ(), env...)
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, &logs
}

// TestControllerTakeoverFollowsTheOperationUnderWay: a plugin built with Velero's
// framework copies a claim's data in an operation of 12 s. The replica carrying out the
// Restore is SIGKILLed while the operation runs; the other takes the Restore over and,
// through the journal the first kept in the cluster, follows the same operation to its
// end rather than starting another: Execute once across both, the Pod that mounts the
// claim made after the copy, the Restore Completed. The backup is one the real Velero
// server wrote of a live namespace; the replicas run as the chart's ServiceAccount.
func TestControllerTakeoverFollowsTheOperationUnderWay(t *testing.T) {
	t.Parallel() // its own control plane and S3 server: beside the other tests that have theirs
	ctx := context.Background()
	_, vc, v, _ := veleroWithFixture(t, harness.VeleroOptions{DisableControllers: harness.RestoreControllers})
	cs, err := kubernetes.NewForConfig(vc.Config)
	require.NoError(t, err)
	backupOfClaim(t, vc, v, "async", "async-src", "12s")
	plugins := withTestPlugins(t, v)
	log := filepath.Join(t.TempDir(), "async.log")
	env := []string{"ASYNC_LOG=" + log}

	a, aLogs := startReplica(t, vc, "replica-a", env, "--plugins", plugins)
	out, err := v.Run(ctx, "restore", "create", "async-taken", "--from-backup", "async", "--namespace-mappings", "async-src:async-dst")
	require.NoError(t, err, out)
	journal := func() string {
		cm, err := cs.CoreV1().ConfigMaps("velero").Get(ctx, "restoregraph-journal-async-taken-0", metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return fmt.Sprint(cm.Data)
	}
	require.Eventually(t, func() bool { return strings.Contains(journal(), `"phase":"InProgress"`) }, 2*time.Minute, 50*time.Millisecond,
		"replica-a starts the copy and journals it in the cluster:\n%s", aLogs)
	_, bLogs := startReplica(t, vc, "replica-b", env, "--plugins", plugins)
	time.Sleep(time.Second) // b stands for the Restore
	require.NoError(t, a.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	data, _ := os.ReadFile(log)
	require.Equal(t, 1, strings.Count(string(data), "execute "), "one operation started: %s", data)
	require.NotContains(t, journal(), `"phase":"Completed"`, "killed while the operation ran")

	phase := veleroPhase(t, vc, veleroRestores, "async-taken", "Completed", "PartiallyFailed", "Failed", "FailedValidation")
	require.Equal(t, "Completed", phase, "replica-b:\n%s", bLogs)
	assert.Contains(t, bLogs.String(), "restore taken over")
	data, _ = os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, 1, "Execute once across both replicas, and nothing cancelled: %s", data)
	assert.Contains(t, journal(), `"phase":"Completed"`, "followed to its end by replica-b")
	pod, err := cs.CoreV1().Pods("async-dst").Get(ctx, "uses-data", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, pod.CreationTimestamp.Time.After(killed), "the Pod is made after the copy, which ran past the kill")
	claim, err := cs.CoreV1().PersistentVolumeClaims("async-dst").Get(ctx, "data", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "async-taken", claim.Labels["velero.io/restore-name"])
}

// TestControllerOverlapsOnlyDisjointRestores: four Restores of a backup the real Velero
// server wrote (a claim whose data a plugin copies in 6 s, and a Pod that mounts it),
// created one after another and carried out by two controller processes. r1-shared and
// r2-shared restore into the same namespace: r2 waits until r1 has released its
// objects, whichever process takes which, and r1, created first, goes first. r3-apart
// and r4-apart restore into namespaces of their own: they run at once. When each object
// ended is read from the processes' logs (-vv, in milliseconds).
func TestControllerOverlapsOnlyDisjointRestores(t *testing.T) {
	t.Parallel() // its own control plane and S3 server: beside the other tests that have theirs
	ctx := context.Background()
	_, vc, v, _ := veleroWithFixture(t, harness.VeleroOptions{DisableControllers: harness.RestoreControllers})
	backupOfClaim(t, vc, v, "app", "app", "6s")
	plugins := withTestPlugins(t, v)
	_, aLogs := startReplica(t, vc, "replica-a", nil, "--plugins", plugins, "-v")
	_, bLogs := startReplica(t, vc, "replica-b", nil, "--plugins", plugins, "-v")
	restores := []string{"r1-shared", "r2-shared", "r3-apart", "r4-apart"}
	into := map[string]string{"r1-shared": "app-shared", "r2-shared": "app-shared", "r3-apart": "app-3", "r4-apart": "app-4"}
	for _, r := range restores {
		out, err := v.Run(ctx, "restore", "create", r, "--from-backup", "app", "--namespace-mappings", "app:"+into[r])
		require.NoError(t, err, out)
	}
	for _, r := range restores {
		phase := veleroPhase(t, vc, veleroRestores, r, "Completed", "PartiallyFailed", "Failed", "FailedValidation")
		require.Equal(t, "Completed", phase, "%s\nreplica-a:\n%s\nreplica-b:\n%s", r, aLogs, bLogs)
	}

	// When each restore's objects ended, from both processes' logs.
	ended := map[string][]time.Time{}
	line := regexp.MustCompile(`time=(\S+) level=DEBUG msg="object ended" restore=(\S+)`)
	for _, logs := range []*syncBuffer{aLogs, bLogs} {
		for _, m := range line.FindAllStringSubmatch(logs.String(), -1) {
			at, err := time.Parse(time.RFC3339Nano, m[1])
			require.NoError(t, err)
			ended[m[2]] = append(ended[m[2]], at)
		}
	}
	from, to := map[string]time.Time{}, map[string]time.Time{}
	for _, r := range restores {
		require.NotEmpty(t, ended[r], "objects of %s", r)
		from[r], to[r] = slices.MinFunc(ended[r], time.Time.Compare), slices.MaxFunc(ended[r], time.Time.Compare)
		t.Logf("%s: objects ended from %s to %s", r, from[r].Format(time.StampMilli), to[r].Format(time.StampMilli))
	}
	assert.True(t, from["r2-shared"].After(to["r1-shared"]), "r2, which overlaps r1 and was created after it, starts once r1 has ended")
	assert.True(t, from["r3-apart"].Before(to["r4-apart"]) && from["r4-apart"].Before(to["r3-apart"]), "r3 and r4, disjoint, run at once")

	dyn, err := dynamic.NewForConfig(vc.Config)
	require.NoError(t, err)
	for _, r := range restores {
		o, err := dyn.Resource(veleroRestores).Namespace("velero").Get(ctx, r, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "admitted", o.GetAnnotations()["restoregraph.dev/admission"], r)
	}
	require.Eventually(t, func() bool {
		evs, err := kubernetes.NewForConfigOrDie(vc.Config).CoreV1().Events("velero").List(ctx,
			metav1.ListOptions{FieldSelector: "involvedObject.name=r2-shared,reason=WaitingForAdmission"})
		return err == nil && len(evs.Items) > 0 && strings.Contains(evs.Items[0].Message, "restore r1-shared")
	}, 30*time.Second, 200*time.Millisecond, "r2 says, in an Event, that it waits for r1")
}

// backupOfClaim has the real Velero server back up, as backup name, a namespace ns it
// makes: a claim whose data the copy-volume plugin copies as copy says ("12s"), and a
// Pod mounting it.
func backupOfClaim(t *testing.T, vc *harness.Cluster, v *harness.Velero, name, ns, copy string) {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(vc.Config)
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Annotations: map[string]string{"example.io/copy": copy}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "uses-data"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "postgres:17"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	out, err := v.Run(ctx, "backup", "create", name, "--include-namespaces", ns, "--snapshot-volumes=false", "--wait")
	require.NoError(t, err, out)
	require.Equal(t, "Completed", veleroPhase(t, vc, veleroBackups, name, "Completed", "PartiallyFailed", "Failed"))
}

// withTestPlugins returns a plugin directory holding Velero's (the object store of the
// location) and test/velero's testplugins, with copy-volume among them.
func withTestPlugins(t *testing.T, v *harness.Velero) string {
	t.Helper()
	plugins := t.TempDir()
	aws, err := filepath.Glob(filepath.Join(v.PluginDir(), "*"))
	require.NoError(t, err)
	for _, f := range aws {
		require.NoError(t, os.Link(f, filepath.Join(plugins, filepath.Base(f))))
	}
	buildTestPlugins(t, plugins)
	return plugins
}
