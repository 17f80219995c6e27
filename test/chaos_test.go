package test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/test/harness"
)

// TestChaos: two controller replicas carry out 50 Restores at once, 49 of the backup the
// real Velero server wrote (testdata/velero) and one of 5,005 objects (bench/workload's
// applications, with the velero-backup.json Velero's sync takes), first calmly, then
// again under other names while a driver injects faults one after another: replica-b
// SIGKILLed and started again, kube-apiserver killed and started again, etcd's leader
// and another member of its three killed and started again, the replicas' connections
// to the API server cut and stalled (a TCP proxy in between). Then the command restores
// 3,010 objects with a journal, SIGKILLed again and again and run again until it ends,
// while the faults go on. The faults' order and timing come from a seed that the test
// logs; RESTOREGRAPH_CHAOS_SEED replays them.
//
// At the end: every Restore Completed with every object restored, each object once
// (no source UID twice in a kind), every owner of a restored object there with the UID
// its reference names, as many objects of each kind no controller makes as the calm run
// made, no Restore's
// Lease or journal left, no admission Lease left; replica-a, which the driver never
// kills, has as many goroutines of its own as after the calm run (two more allowed for
// the connections it made again) and no more than 1.5 times its memory; the command's
// restore is whole.
//
// It runs for minutes: make test-chaos runs it (RESTOREGRAPH_CHAOS=1).
func TestChaos(t *testing.T) {
	if os.Getenv("RESTOREGRAPH_CHAOS") == "" {
		t.Skip("minutes of faults: make test-chaos runs it (RESTOREGRAPH_CHAOS=1)")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RESTOREGRAPH_CHAOS_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "RESTOREGRAPH_CHAOS_SEED")
	}
	t.Logf("chaos seed %d (RESTOREGRAPH_CHAOS_SEED=%d replays the faults' order and timing)", seed, seed)
	ctx := context.Background()

	s3srv, err := harness.StartS3(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(s3srv.Stop)
	uploadFixture(t, s3srv, fixtureBackup)
	_, appsNamespaces := uploadApps(t, s3srv, "apps", 5000)
	vc := startCluster(t, harness.Options{Controllers: harness.AppControllers, ServiceAccountAdmission: true, Nodes: 2,
		EtcdMembers: 3, ServiceCIDR: "10.96.0.0/16"})
	v, err := vc.StartVelero(ctx, s3srv, harness.VeleroOptions{DisableControllers: harness.RestoreControllers})
	require.NoError(t, err)
	veleroPhase(t, vc, veleroBackups, fixtureBackup, "Completed")
	veleroPhase(t, vc, veleroBackups, "apps", "Completed")
	requireCLI(t)

	// The replicas reach the API server through the proxy the driver cuts and stalls.
	api, err := url.Parse(vc.Config.Host)
	require.NoError(t, err)
	proxy := newTCPProxy(t, api.Host)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, vc.WriteKubeconfig(kubeconfig, "https://"+proxy.Addr, "admin"))
	replica := func(identity, metrics string) (*exec.Cmd, *syncBuffer) {
		return startReplica(t, vc, identity, nil, "--plugins", v.PluginDir(), "--kubeconfig", kubeconfig, "--metrics-address", metrics)
	}
	aMetrics, bMetrics := freeAddr(t), freeAddr(t)
	_, aLogs := replica("replica-a", aMetrics)
	var bMu sync.Mutex
	b, bLog := replica("replica-b", bMetrics)
	bLogs := []*syncBuffer{bLog} // of each replica-b process, in turn
	for _, addr := range []string{aMetrics, bMetrics} {
		waitReadyz(t, addr)
	}

	restores := func(prefix string) map[string]map[string]any {
		specs := map[string]map[string]any{}
		for i := range 49 {
			specs[fmt.Sprintf("%sshop-%02d", prefix, i)] = map[string]any{"backupName": fixtureBackup, "includedNamespaces": []any{"shop"},
				"namespaceMapping": map[string]any{"shop": fmt.Sprintf("%sshop-%02d", prefix, i)}}
		}
		mapping := map[string]any{}
		for i, ns := range appsNamespaces {
			mapping[ns] = fmt.Sprintf("%sapps-%d", prefix, i)
		}
		specs[prefix+"apps"] = map[string]any{"backupName": "apps", "namespaceMapping": mapping}
		return specs
	}

	calm := restores("calm-")
	calmTook := createAndWait(t, vc, s3srv, calm)
	settle := func() { time.Sleep(5 * time.Second) }
	settle()
	goroutinesCalm, rssCalm := ownGoroutines(t, aMetrics), metricOf(t, aMetrics, "process_resident_memory_bytes")
	t.Logf("calm: 50 Restores in %s; replica-a %d goroutines of its own, %.0f MiB", calmTook.Round(100*time.Millisecond), goroutinesCalm, rssCalm/(1<<20))

	// The driver: one fault after another, until stopped.
	d := &chaosDriver{t: t, rng: rand.New(rand.NewPCG(seed, 1)), c: vc, proxy: proxy, started: time.Now(), faults: map[string]int{}}
	d.killReplica = func() {
		bMu.Lock()
		defer bMu.Unlock()
		assert.NoError(t, b.Process.Signal(syscall.SIGKILL))
		b.Wait()
		time.Sleep(d.between(1, 3))
		b, bLog = replica("replica-b", bMetrics)
		bLogs = append(bLogs, bLog)
	}
	stop := make(chan struct{})
	driven := make(chan struct{})
	go func() { defer close(driven); d.run(ctx, stop) }()
	stopDriver := sync.OnceFunc(func() { close(stop); <-driven })
	t.Cleanup(stopDriver)

	chaos := restores("chaos-")
	chaosTook := createAndWait(t, vc, s3srv, chaos)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		bMu.Lock()
		defer bMu.Unlock()
		var failures []string
		for _, l := range append([]*syncBuffer{aLogs}, bLogs...) {
			for line := range strings.Lines(l.String()) {
				if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
					failures = append(failures, line)
				}
			}
		}
		t.Logf("the replicas' warnings and errors:\n%s", tail(strings.Join(failures, ""), 30000))
	})

	// The command, killed again and again, run again from its journal each time, while
	// the faults go on. It reaches the API server through the proxy too.
	tarball := wideBackup(t, "chaos-cli", 10, 300)
	journal := filepath.Join(t.TempDir(), "journal")
	args := []string{"restore", "--backup", tarball, "--kubeconfig", kubeconfig, "--journal", journal, "--restore-name", "chaos-cli",
		"-o", "json", "--workers", "8"}
	kills := rand.New(rand.NewPCG(seed, 2)) // apart from the driver's, which its goroutine uses
	runs, killedRuns := 0, 0
	var last cliRun
	for {
		runs++
		var killed bool
		last, killed = runCLIKilledAfter(t, time.Duration((3+5*kills.Float64())*float64(time.Second)), args...)
		if killed {
			killedRuns++
			continue
		}
		if last.exit == 0 || runs > 40 {
			break
		}
		t.Logf("the command's run %d ended with exit %d: running it again\n%s", runs, last.exit, tail(last.stderr, 1000))
	}
	stopDriver()
	require.Zero(t, last.exit, "after %d runs, %d killed\n%s", runs, killedRuns, tail(last.stderr, 4000))
	t.Logf("the command: %d runs, %d SIGKILLed, the last exit 0", runs, killedRuns)

	t.Logf("faults injected: %v over %s; 50 Restores calm in %s, under faults in %s (%.1fx)", d.faults, time.Since(d.started).Round(time.Second),
		calmTook.Round(100*time.Millisecond), chaosTook.Round(100*time.Millisecond), chaosTook.Seconds()/calmTook.Seconds())
	require.NoError(t, vc.WaitReady(ctx, 2*time.Minute))

	// Every Restore whole, each object once, as many of each kind as calmly, every owner there.
	dyn, err := dynamic.NewForConfig(vc.Config)
	require.NoError(t, err)
	objects := 0
	for name := range chaos {
		r, err := dyn.Resource(veleroRestores).Namespace("velero").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		phase, _, _ := unstructured.NestedString(r.Object, "status", "phase")
		restored, _, _ := unstructured.NestedInt64(r.Object, "status", "progress", "itemsRestored")
		total, _, _ := unstructured.NestedInt64(r.Object, "status", "progress", "totalItems")
		assert.Equal(t, "Completed", phase, "%s", name)
		assert.Equal(t, total, restored, "%s: every object restored", name)
		objects += int(restored)
		calmName := "calm-" + strings.TrimPrefix(name, "chaos-")
		assert.Equal(t, restoredKinds(t, dyn, calmName), restoredKinds(t, dyn, name), "%s: as many of each kind as %s", name, calmName)
	}
	t.Logf("%d objects restored by the 50 Restores under faults", objects)

	// Nothing left of the Restores: their Leases, their journals, their admission.
	cs, err := kubernetes.NewForConfig(vc.Config)
	require.NoError(t, err)
	var left []string
	assert.Eventually(t, func() bool {
		leases, err := cs.CoordinationV1().Leases("velero").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		admission, err := cs.CoordinationV1().Leases("restoregraph-admission").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		left = nil
		for _, l := range append(leases.Items, admission.Items...) {
			if l.Namespace != "velero" || strings.HasPrefix(l.Name, "restoregraph-restore-") {
				left = append(left, l.Namespace+"/"+l.Name+" held by "+ptr.Deref(l.Spec.HolderIdentity, ""))
			}
		}
		return len(left) == 0
	}, time.Minute, time.Second, "no Lease left")
	if len(left) > 0 {
		t.Logf("Leases left: %v", left)
	}
	cms, err := cs.CoreV1().ConfigMaps("velero").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, cm := range cms.Items {
		assert.False(t, strings.HasPrefix(cm.Name, "restoregraph-journal-"), "journal %s left", cm.Name)
	}

	// replica-a, never killed, holds what it held after the calm run.
	settle()
	goroutines, rss := ownGoroutines(t, aMetrics), metricOf(t, aMetrics, "process_resident_memory_bytes")
	t.Logf("replica-a after the faults: %d goroutines of its own (%d calm), %.0f MiB (%.0f calm)", goroutines, goroutinesCalm, rss/(1<<20), rssCalm/(1<<20))
	assert.LessOrEqual(t, goroutines, goroutinesCalm+2, "replica-a's goroutines:\n%s", goroutineProfile(aMetrics))
	assert.LessOrEqual(t, rss, 1.5*rssCalm, "replica-a's resident memory")

	assertWhole(t, vc, "chaos-cli", 10, 300)
}

// chaosDriver injects faults into a cluster one after another, each chosen and timed by
// its random source, and logs each as it comes.
type chaosDriver struct {
	t           *testing.T
	rng         *rand.Rand
	c           *harness.Cluster
	proxy       *tcpProxy
	killReplica func()
	started     time.Time

	mu     sync.Mutex
	faults map[string]int // by kind
}

// between is a duration between lo and hi seconds, from the driver's random source.
func (d *chaosDriver) between(lo, hi float64) time.Duration {
	return time.Duration((lo + d.rng.Float64()*(hi-lo)) * float64(time.Second))
}

// run injects faults until stop is closed, 2 to 5 s apart.
func (d *chaosDriver) run(ctx context.Context, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(d.between(2, 5)):
		}
		kind := []string{"replica killed", "kube-apiserver restarted", "etcd leader killed", "etcd member restarted",
			"connections cut", "connections stalled"}[d.rng.IntN(6)]
		away := d.between(1, 4)
		d.mu.Lock()
		d.faults[kind]++
		d.mu.Unlock()
		at := time.Since(d.started).Round(100 * time.Millisecond)
		switch kind {
		case "replica killed":
			d.t.Logf("%s: replica-b SIGKILLed", at)
			d.killReplica()
		case "kube-apiserver restarted":
			d.t.Logf("%s: kube-apiserver SIGKILLed, started again after %s", at, away.Round(100*time.Millisecond))
			d.restart(ctx, "kube-apiserver", away)
		case "etcd leader killed", "etcd member restarted":
			leader, err := d.c.EtcdLeader(ctx)
			if err != nil {
				d.t.Logf("%s: %s: %v", at, kind, err)
				continue
			}
			member := leader
			if kind == "etcd member restarted" {
				n := leader[len(leader)-1] - '0'
				member = fmt.Sprintf("etcd-%d", (int(n)+1+d.rng.IntN(2))%3)
			}
			d.t.Logf("%s: %s %s SIGKILLed (the leader is %s), started again after %s", at, kind, member, leader, away.Round(100*time.Millisecond))
			d.restart(ctx, member, away)
		case "connections cut":
			d.t.Logf("%s: the replicas' and the command's connections reset, refused for %s", at, away.Round(100*time.Millisecond))
			d.proxy.Cut(away)
		case "connections stalled":
			d.t.Logf("%s: the replicas' and the command's connections stalled for %s", at, away.Round(100*time.Millisecond))
			d.proxy.Stall(away)
		}
	}
}

// restart kills process name, and starts it again after away; for kube-apiserver, it
// returns once the API server is ready again. A failure fails the test (the driver
// runs beside it, so it does not stop it).
func (d *chaosDriver) restart(ctx context.Context, name string, away time.Duration) {
	if !assert.NoError(d.t, d.c.Kill(name)) {
		return
	}
	time.Sleep(away)
	if !assert.NoError(d.t, d.c.Restart(name)) {
		return
	}
	if name == "kube-apiserver" {
		assert.NoError(d.t, d.c.WaitReady(ctx, 2*time.Minute), "kube-apiserver ready again\n%s", tail(d.c.Log("kube-apiserver"), 4000))
	}
}

// uploadApps writes a backup of objects application objects (bench/workload's) where
// Velero keeps backups in s, with the velero-backup.json its sync takes (Velero did not
// write this one), and returns how many objects it holds and their namespaces.
func uploadApps(t testing.TB, s *harness.S3, name string, objects int) (int, []string) {
	t.Helper()
	ctx := context.Background()
	var tarball bytes.Buffer
	n, err := workload.WriteApps(&tarball, objects, 1)
	require.NoError(t, err)
	b, err := archive.Read(ctx, bytes.NewReader(tarball.Bytes()), archive.Options{})
	require.NoError(t, err)
	var namespaces []string
	for _, it := range b.Manifest().Items() {
		if it.Group == "" && it.Resource == "namespaces" {
			namespaces = append(namespaces, it.Name)
		}
	}
	require.NotEmpty(t, namespaces)
	now := time.Now().UTC()
	ts := now.Format(time.RFC3339)
	record, err := json.Marshal(map[string]any{
		"apiVersion": "velero.io/v1", "kind": "Backup",
		"metadata": map[string]any{"name": name, "namespace": "velero", "labels": map[string]any{"velero.io/storage-location": "default"}},
		"spec":     map[string]any{"storageLocation": "default", "ttl": "720h0m0s"},
		"status": map[string]any{"version": 1, "formatVersion": "1.1.0", "phase": "Completed", "startTimestamp": ts, "completionTimestamp": ts,
			"expiration": now.Add(720 * time.Hour).Format(time.RFC3339), "progress": map[string]any{"totalItems": n, "itemsBackedUp": n}}})
	require.NoError(t, err)
	// velero-backup.json last: Velero's sync takes a backup once it is there.
	for _, f := range []struct {
		name string
		data []byte
	}{{name + ".tar.gz", tarball.Bytes()}, {"velero-backup.json", record}} {
		_, err = s.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String("backups/" + name + "/" + f.name), Body: bytes.NewReader(f.data)})
		require.NoError(t, err)
	}
	return n, namespaces
}

// createAndWait creates the Restores of specs at once and returns the time until every
// one has ended; one that did not complete fails the test, with what its results say.
func createAndWait(t *testing.T, c *harness.Cluster, s3srv *harness.S3, specs map[string]map[string]any) time.Duration {
	t.Helper()
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(c.Config)
	require.NoError(t, err)
	restores := dyn.Resource(veleroRestores).Namespace("velero")
	started := time.Now()
	for name, spec := range specs {
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := restores.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "velero.io/v1", "kind": "Restore",
				"metadata": map[string]any{"name": name, "namespace": "velero"}, "spec": spec}}, metav1.CreateOptions{})
			return err == nil, nil // the API server may be away: create it once it is back
		}), "Restore %s created", name)
	}
	var phases map[string]string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Minute, true, func(ctx context.Context) (bool, error) {
		phases = map[string]string{}
		for name := range specs {
			r, err := restores.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			phases[name], _, _ = unstructured.NestedString(r.Object, "status", "phase")
		}
		for _, p := range phases {
			if p != "Completed" && p != "PartiallyFailed" && p != "Failed" && p != "FailedValidation" {
				return false, nil
			}
		}
		return true, nil
	})
	took := time.Since(started)
	require.NoError(t, err, "phases: %v", phases)
	for name, p := range phases {
		if p != "Completed" {
			r, err := restores.Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			status, _, _ := unstructured.NestedMap(r.Object, "status")
			t.Errorf("Restore %s %s: %v\n%s", name, p, status, restoreResults(t, s3srv, name))
		}
	}
	return took
}

// restoreResults is what the results file of Restore name in s says failed, and warned.
func restoreResults(t *testing.T, s *harness.S3, name string) string {
	t.Helper()
	obj, err := s.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(s.Bucket),
		Key: aws.String("restores/" + name + "/restore-" + name + "-results.gz")})
	if err != nil {
		return "no results: " + err.Error()
	}
	defer obj.Body.Close()
	zr, err := gzip.NewReader(obj.Body)
	if err != nil {
		return err.Error()
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return err.Error()
	}
	return tail(string(data), 8000)
}

// restoredKinds counts the objects Restore name made, by resource, across the kinds
// of the backups, asserting that no source UID is there twice in a kind and that every
// owner a restored object names is there with that UID (made by the restore, or by a
// controller first and adopted).
func restoredKinds(t *testing.T, dyn dynamic.Interface, name string) map[string]int {
	t.Helper()
	ctx := context.Background()
	counts := map[string]int{}
	sources := map[string]string{} // resource and source UID: namespace/name
	var owned []unstructured.Unstructured
	namespaces := map[string]bool{}
	kinds := []schema.GroupVersionResource{{Version: "v1", Resource: "pods"}, {Version: "v1", Resource: "configmaps"},
		{Version: "v1", Resource: "secrets"}, {Version: "v1", Resource: "services"}, {Version: "v1", Resource: "serviceaccounts"},
		{Group: "apps", Version: "v1", Resource: "deployments"}, {Group: "apps", Version: "v1", Resource: "replicasets"},
		{Group: "apps", Version: "v1", Resource: "statefulsets"}, {Group: "apps", Version: "v1", Resource: "controllerrevisions"},
		{Group: "batch", Version: "v1", Resource: "jobs"}, {Group: "batch", Version: "v1", Resource: "cronjobs"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}}
	for _, gvr := range kinds {
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: "velero.io/restore-name=" + name})
		require.NoError(t, err)
		for _, o := range list.Items {
			namespaces[o.GetNamespace()] = true
			src := o.GetAnnotations()["restoregraph.dev/source-uid"]
			require.NotEmpty(t, src, "%s %s/%s", gvr.Resource, o.GetNamespace(), o.GetName())
			key := gvr.Resource + " " + src
			assert.NotContains(t, sources, key, "%s %s/%s made twice (also %s)", gvr.Resource, o.GetNamespace(), o.GetName(), sources[key])
			sources[key] = o.GetNamespace() + "/" + o.GetName()
			counts[gvr.Resource]++
			if len(o.GetOwnerReferences()) > 0 {
				owned = append(owned, o)
			}
		}
	}
	there := map[types.UID]bool{}
	for ns := range namespaces {
		for _, gvr := range kinds {
			list, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			for _, o := range list.Items {
				there[o.GetUID()] = true
			}
		}
	}
	for _, o := range owned {
		for _, ref := range o.GetOwnerReferences() {
			assert.True(t, there[ref.UID], "%s %s/%s: its owner %s %s (%s) is there", o.GetKind(), o.GetNamespace(), o.GetName(), ref.Kind, ref.Name, ref.UID)
		}
	}
	// What the cluster's controllers may make before the restore does, which it then
	// adopts unlabelled, is not counted.
	for _, made := range []string{"pods", "replicasets", "controllerrevisions", "serviceaccounts", "jobs"} {
		delete(counts, made)
	}
	return counts
}

// runCLIKilledAfter runs the command, and SIGKILLs it after d (never when 0) if it has
// not ended; it reports whether it was killed.
func runCLIKilledAfter(t *testing.T, d time.Duration, args ...string) (cliRun, bool) {
	t.Helper()
	bin, err := cliBinary()
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	started := time.Now()
	require.NoError(t, cmd.Start())
	if d > 0 {
		timer := time.AfterFunc(d, func() { cmd.Process.Signal(syscall.SIGKILL) })
		defer timer.Stop()
	}
	err = cmd.Wait()
	r := cliRun{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(started)}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		require.NoError(t, err)
		return r, false
	}
	r.exit = ee.ExitCode()
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return r, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// freeAddr is a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// waitReadyz waits until a replica's /readyz answers 200.
func waitReadyz(t *testing.T, addr string) {
	t.Helper()
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}), "replica at %s ready", addr)
}

// ownGoroutines counts a replica's goroutines but those of its connection to a plugin
// process (go-plugin's and gRPC's), which lives while the plugin host keeps the plugin
// and comes and goes with it, and the one serving the count.
func ownGoroutines(t *testing.T, addr string) int {
	t.Helper()
	// The profile's debug=1 text: a header line, then a block per stack: "N @ PCs" and
	// a line per frame.
	n, count := 0, 0
	foreign := false
	end := func() {
		if !foreign {
			n += count
		}
	}
	for line := range strings.Lines(goroutineProfile(addr)) {
		if head, _, ok := strings.Cut(line, " @ 0x"); ok {
			end()
			c, err := strconv.Atoi(head)
			require.NoError(t, err, "%q", line)
			count, foreign = c, false
			continue
		}
		if strings.Contains(line, "hashicorp/go-plugin") || strings.Contains(line, "google.golang.org/grpc") ||
			strings.Contains(line, "runtime/pprof.writeGoroutine") {
			foreign = true
		}
	}
	end()
	require.Positive(t, n, "goroutines of %s", addr)
	return n
}

// goroutineProfile is a replica's goroutines, as its pprof endpoint lists them.
func goroutineProfile(addr string) string {
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	return buf.String()
}
