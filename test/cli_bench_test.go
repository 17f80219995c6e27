package test

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/clirun"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
)

const (
	cliObjects      = 100_000
	envelopeObjects = 1_000_000
)

// envelopeServer is the control plane for a million objects on a machine of 24 GiB:
// etcd's backend quota at its largest suggested, where its default of 2 GiB runs out;
// the API server's heap held to 14 GiB, for a Go heap grows to twice what survived
// its last collection before the next (held to 11 GiB, the server's was at 9.9 GB by
// 715,000 objects); and no controller manager, whose garbage collector held 3.9 GB at
// 715,000 objects and, held to 4 GiB, spent three quarters of a core collecting.
var envelopeServer = harness.Options{EtcdQuotaBytes: 8 << 30, APIServerMemoryLimit: 14 << 30, NoControllerManager: true}

// appsServer is every side's control plane for apps: kube-controller-manager with the
// namespace controller alone. The restored objects' ceiling cannot run a garbage
// collector (restoredCeiling), so no side does: with one beside the command's server
// and not beside that ceiling's, the command's side also paid for the collector's
// watches of every object, and its side of the machine was measured against a server
// with less to do.
var appsServer = harness.Options{Controllers: []string{"namespace"}}

// BenchmarkIntegrationCLIRestore restores generated Velero backups into a real API
// server of its own with the restoregraph command, default flags (the server has API
// Priority and Fairness: the client sets no limit of its own), and reports the command's
// wall time, objects per second and peak resident memory; for apps and envelope also
// two unordered ceilings, each in another fresh server in the same run, and the
// command's rate over each: the backup's objects (tarballCeiling), and the objects as
// the restore made them, listed from its server (restoredCeiling: the same objects
// stored, so that what is left is the order and the client), the three sides in an
// order that turns from run to run (sideOrders); it logs beside each other the
// requests each server served and the CPU its processes used, and for apps and
// envelope what each side's API server did step by step (serverProfile). With
// RESTOREGRAPH_BENCH_ORDER=ROW (1 to 3) the first run takes that row of the orders
// (firstOrder); with RESTOREGRAPH_BENCH_RESTORED=DIR the restored objects are kept in
// DIR between runs, and such a row takes them from there when a run before left them
// (keptRestored). With
// RESTOREGRAPH_BENCH_PROFILES=DIR, the command writes its CPU and heap profiles there
// (NAME.cpu.pprof, NAME.heap.pprof), and for apps and envelope each side's API server
// its CPU profile over the same window of its creates (NAME.apiserver-SIDE.pprof,
// serverProfile):
//
//   - capi-fleet: the Cluster API fleet of BenchmarkIntegrationRestore (4,895 objects
//     under 15 CRDs);
//   - apps: 100,000 application objects (namespaces of Deployments, ReplicaSets, Pods,
//     Services, ConfigMaps, Secrets, ServiceAccounts and RoleBindings);
//   - envelope: 1,000,000 objects in workload.Envelope's shape, within Kubernetes'
//     scalability thresholds (4,950 namespaces, 9,900 Services, 148,500 Pods, and the
//     old ReplicaSets and Helm release Secrets of a long-lived cluster), in servers
//     made for that size (envelopeServer). -bench 'IntegrationCLIRestore/apps' leaves it
//     out.
func BenchmarkIntegrationCLIRestore(b *testing.B) {
	bin, err := clirun.Build(filepath.Join("..", "cmd", "restoregraph"))
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range []struct {
		name    string
		write   func(f *os.File) (int, error)
		ceiling bool
		server  harness.Options
		profile serverProfile
	}{
		{name: "capi-fleet", write: func(f *os.File) (int, error) {
			gen := workload.CAPI(workload.CAPIOptions{Clusters: benchClusters, Seed: 1})
			return preferred(gen), gen.Write(f)
		}},
		{name: "apps", ceiling: true, server: appsServer, profile: serverProfile{"apps", 10 * time.Second, 100 * time.Second, 10 * time.Second}, write: func(f *os.File) (int, error) { return workload.WriteApps(f, cliObjects, 1) }},
		{name: "envelope", ceiling: true, server: envelopeServer, profile: serverProfile{"envelope", time.Minute, 13 * time.Minute, time.Minute}, write: func(f *os.File) (int, error) {
			return workload.WriteShaped(f, envelopeObjects, 1, workload.Envelope)
		}},
	} {
		b.Run(w.name, func(b *testing.B) {
			backup := filepath.Join(b.TempDir(), w.name+".tar.gz")
			f, err := os.Create(backup)
			if err != nil {
				b.Fatal(err)
			}
			n, err := w.write(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				b.Fatal(err)
			}
			// With -benchtime Nx the sides run N times each, in an order that turns
			// (sideOrders), so that over three runs each side is first, second and last
			// once and what the machine does over a run falls on every side alike. The
			// ratio is of their totals, and each run's is logged. The CLI's objects/s and
			// peak RSS are its last run's.
			var last clirun.Run
			var cliTook, ceilingTook, restoredTook time.Duration
			// restored is the objects the last CLI run made, which the restored
			// objects' ceiling creates: the first row has the CLI go first.
			restored := filepath.Join(b.TempDir(), "restored.json.gz")
			first := firstOrder(b)
			var kept string // only the ceilings' workloads list what the restore made
			if w.ceiling {
				kept = keptRestored(b, w.name, backup)
			}
			if w.ceiling && slices.Index(sideOrders[first], restoredSide) < slices.Index(sideOrders[first], cliSide) {
				// A square begun at a later row (RESTOREGRAPH_BENCH_ORDER): the restored
				// objects come from a restore before the measured runs, untimed, as the
				// row before would have made them, or from the file a run before kept
				// of this backup's (RESTOREGRAPH_BENCH_RESTORED).
				if kept != "" && copyFile(kept, restored) == nil {
					st, _ := os.Stat(kept)
					b.Logf("the restored objects kept at %s (written %s), not restored again", kept, st.ModTime().UTC().Format(time.RFC3339))
				} else {
					c := serviceCluster(b, w.server)
					_, err := clirun.Start(bin, "restore", "--backup", backup, "--kubeconfig", c.Kubeconfig)
					if err == nil {
						restoredObjects(b, c, backup, restored)
						keepRestored(b, restored, kept)
					}
					c.Stop()
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			runs := 0
			for b.Loop() {
				b.StopTimer()
				order := []string{cliSide} // no ceiling: the command alone
				if w.ceiling {
					order = sideOrders[(first+runs)%len(sideOrders)]
				}
				runs++
				var sent, ceilingSent, restoredSent requestCounts
				var cpu, ceilingCPU, restoredCPU map[string]time.Duration
				var took, rtook time.Duration
				for _, side := range order {
					switch side {
					case cliSide:
						c := serviceCluster(b, w.server)
						// The CLI's default flags: the server has API Priority and Fairness,
						// so the client sets no limit of its own.
						args := []string{"restore", "--backup", backup, "--kubeconfig", c.Kubeconfig}
						if dir := os.Getenv("RESTOREGRAPH_BENCH_PROFILES"); dir != "" {
							args = append(args, "--cpu-profile", filepath.Join(dir, w.name+".cpu.pprof"), "--heap-profile", filepath.Join(dir, w.name+".heap.pprof"))
						}
						profiled := w.profile.start(b, c, "cli")
						b.StartTimer()
						last, err = clirun.Start(bin, args...)
						b.StopTimer()
						profiled(err == nil)
						if err == nil && w.ceiling {
							sent, cpu = serverRequests(b, c), serverCPU(b, c)
							cpu[clientCPU] = last.CPU
							restoredObjects(b, c, backup, restored)
							keepRestored(b, restored, kept)
						}
						c.Stop()
						if err != nil {
							b.Fatal(err)
						}
						cliTook += last.Took
					case backupSide:
						took, ceilingSent, ceilingCPU = tarballCeiling(b, backup, w.server, w.profile)
						ceilingTook += took
					case restoredSide:
						rtook, restoredSent, restoredCPU = restoredCeiling(b, restored, w.server, w.profile)
						restoredTook += rtook
					}
				}
				if w.ceiling {
					b.Logf("order %s; cli %.1f s, ceiling %.1f s: %.3f, the restored objects' ceiling %.1f s: %.3f", strings.Join(order, ", "), last.Took.Seconds(),
						took.Seconds(), took.Seconds()/last.Took.Seconds(), rtook.Seconds(), rtook.Seconds()/last.Took.Seconds())
					b.Logf("requests the API server served, cli / ceiling / restored objects' ceiling: %s", sent.beside(ceilingSent, restoredSent))
					b.Logf("CPU seconds of the servers since they started, cli / ceiling / restored objects' ceiling: kube-apiserver %s, etcd %s, kube-controller-manager %s; of the client, over its run (the CLI) or its creates (a ceiling's goroutines): %s",
						seconds("kube-apiserver", cpu, ceilingCPU, restoredCPU), seconds("etcd", cpu, ceilingCPU, restoredCPU),
						seconds("kube-controller-manager", cpu, ceilingCPU, restoredCPU), seconds(clientCPU, cpu, ceilingCPU, restoredCPU))
				}
				b.StartTimer()
			}
			last.Report(b, n)
			if ceilingTook > 0 {
				b.ReportMetric(float64(n*runs)/ceilingTook.Seconds(), "ceiling-objects/s")
				b.ReportMetric(ceilingTook.Seconds()/cliTook.Seconds(), "cli/ceiling")
				b.ReportMetric(float64(n*runs)/restoredTook.Seconds(), "restored-ceiling-objects/s")
				b.ReportMetric(restoredTook.Seconds()/cliTook.Seconds(), "cli/restored-ceiling")
			}
		})
	}
}

// The sides of BenchmarkIntegrationCLIRestore, and the orders they run in, one run
// after another: a Latin square, each side first, second and last once in three runs.
// The restored objects' ceiling creates what the last CLI run made, so it follows the
// CLI in the first run, and in the others creates the run before's objects (the same
// objects as the restore makes them every time, but for the UIDs the server gives).
const (
	cliSide      = "cli"
	backupSide   = "backup's objects"
	restoredSide = "restored objects"
)

var sideOrders = [][]string{
	{cliSide, backupSide, restoredSide},
	{backupSide, restoredSide, cliSide},
	{restoredSide, cliSide, backupSide},
}

// firstOrder returns the row of sideOrders the first run takes: 0, or the row
// RESTOREGRAPH_BENCH_ORDER names (1 to 3), so that a square too long for one sitting (the
// envelope's three runs take more than three hours) can be run a row at a time, each
// row's ratios still of sides measured in one run.
func firstOrder(b *testing.B) int {
	v := os.Getenv("RESTOREGRAPH_BENCH_ORDER")
	if v == "" {
		return 0
	}
	row, err := strconv.Atoi(v)
	if err != nil || row < 1 || row > len(sideOrders) {
		b.Fatalf("RESTOREGRAPH_BENCH_ORDER=%q: want a row of sideOrders, 1 to %d", v, len(sideOrders))
	}
	return row - 1
}

// keptRestored returns where the restored objects of the backup at backup are kept
// between runs, when RESTOREGRAPH_BENCH_RESTORED names a directory (else ""): a file
// named by the workload and the backup's SHA-256, so that a row begun at a later order
// (the million's second takes over an hour, and its restore before it more) need not
// restore the same backup again first. The objects are the same from
// run to run but for the UIDs the server gives and the restore's name; a command that
// restored differently would leave a file of its own objects after its run.
func keptRestored(b *testing.B, name, backup string) string {
	b.Helper()
	dir := os.Getenv("RESTOREGRAPH_BENCH_RESTORED")
	if dir == "" {
		return ""
	}
	f, err := os.Open(backup)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		b.Fatal(err)
	}
	return filepath.Join(dir, fmt.Sprintf("%s-%x.restored.json.gz", name, h.Sum(nil)[:8]))
}

// keepRestored copies the restored objects at path to kept (keptRestored), whole or
// not at all, unless kept is "".
func keepRestored(b *testing.B, path, kept string) {
	b.Helper()
	if kept == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(kept), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := copyFile(path, kept+".part"); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(kept+".part", kept); err != nil {
		b.Fatal(err)
	}
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// serviceCluster starts a control plane of its own with opts and a Service range for
// 10,000 Services and more (a /16), untimed; the caller stops it, or else the
// benchmark's end, where it fails first.
func serviceCluster(b *testing.B, opts harness.Options) *harness.Cluster {
	b.Helper()
	opts.ServiceCIDR = "10.96.0.0/16"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := harness.StartWith(ctx, b.TempDir(), harness.Binaries{}, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Stop) // Stop twice is Stop once
	return c
}

// BenchmarkIntegrationServices creates 10,000 Services, 1,000 at a time with 16 clients,
// in a real API server of its own, and reports the rate of the first thousand and of the
// last: how the server's Service creation slows as Services accumulate, which bounds any
// restore of a backup that holds many of them.
func BenchmarkIntegrationServices(b *testing.B) {
	var first, last float64
	for b.Loop() {
		b.StopTimer()
		c := serviceCluster(b, harness.Options{})
		cfg := rest.CopyConfig(c.Config)
		cfg.QPS, cfg.Burst = -1, 0
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "svc"}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for batch := range 10 {
			start := time.Now()
			var g errgroup.Group
			g.SetLimit(16)
			for i := range 1000 {
				g.Go(func() error {
					svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%05d", batch*1000+i)},
						Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
					_, err := cs.CoreV1().Services("svc").Create(ctx, svc, metav1.CreateOptions{})
					return err
				})
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
			rate := 1000 / time.Since(start).Seconds()
			if batch == 0 {
				first = rate
			}
			last = rate
		}
		b.StopTimer()
		c.Stop()
		b.StartTimer()
	}
	b.ReportMetric(first, "first-1000-services/s")
	b.ReportMetric(last, "last-1000-services/s")
}

// tarballCeiling creates the objects of the tarball at path in a control plane of its own
// (serviceCluster's with opts), untimed for its namespaces, then the rest with
// benchWorkers goroutines in no order, unthrottled, with what a restore must change for
// any target (owner references dropped, Services' cluster IPs left to the target): the
// ceiling a restore of the same objects is measured against. It returns what
// ceilingObjects.create does.
func tarballCeiling(b *testing.B, path string, opts harness.Options, p serverProfile) (time.Duration, requestCounts, map[string]time.Duration) {
	b.Helper()
	bk, err := archive.ReadFile(context.Background(), path, archive.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var c ceilingObjects
	for _, it := range bk.Manifest().Items() {
		body, err := bk.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
		if err != nil {
			b.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(body); err != nil {
			b.Fatal(err)
		}
		c.add(b, u, it.Resource, true)
	}
	bk.Close()
	return c.create(b, opts, p, "ceiling")
}

// restoredCeiling is tarballCeiling's, of the objects a restore made as its server stored
// them (restoredObjects' file at path): owner references, labels and annotations
// included, only Services' cluster IPs left to the target. Against it, a restore's rate
// is that of its order and its client alone, for the server is given the same objects to
// store. Its owner references name the restore's UIDs, which this server
// does not have, so no garbage collector may run beside it: it would delete what is
// created. opts must say so (appsServer, envelopeServer), and are every side's.
func restoredCeiling(b *testing.B, path string, opts harness.Options, p serverProfile) (time.Duration, requestCounts, map[string]time.Duration) {
	b.Helper()
	if !opts.NoControllerManager && (len(opts.Controllers) == 0 || slices.Contains(opts.Controllers, "garbagecollector") || slices.Contains(opts.Controllers, "*")) {
		b.Fatalf("the restored objects' ceiling runs kube-controller-manager's %v: a garbage collector would delete what it creates", opts.Controllers)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	var c ceilingObjects
	dec := json.NewDecoder(bufio.NewReader(zr))
	for {
		var l restoredLine
		if err := dec.Decode(&l); err == io.EOF {
			break
		} else if err != nil {
			b.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(l.Object); err != nil {
			b.Fatal(err)
		}
		c.add(b, u, l.Resource, false)
	}
	return c.create(b, opts, p, "restored")
}

// restoredLine is one object in restoredObjects' file, with the resource it was listed
// from.
type restoredLine struct {
	Resource string          `json:"resource"`
	Object   json.RawMessage `json:"object"`
}

// restoredObjects writes to path, one JSON line an object, gzip'd, every object the
// restore into c made (those carrying restore.SourceUIDAnnotation) of the resources of
// the backup at backup, as c's server returns them, less what the server sets on
// create (uid, resourceVersion, creationTimestamp, generation, and managedFields: a
// create that carries them is taken at its word, and the server skips the work of
// finding them, which the restore's creates did not). It lists them a
// namespace at a time, where the backup has them: small lists, each in one answer,
// which a million objects, a continue token and the server's compaction every few
// seconds would not be. It fails unless the restore made every object of the backup.
func restoredObjects(b *testing.B, c *harness.Cluster, backup, path string) {
	b.Helper()
	ctx := context.Background()
	bk, err := archive.ReadFile(ctx, backup, archive.Options{})
	if err != nil {
		b.Fatal(err)
	}
	type list struct {
		gvr       schema.GroupVersionResource
		namespace string
	}
	var lists []list
	seen := map[list]bool{}
	items := bk.Manifest().Items()
	for _, it := range items {
		l := list{it.GroupResource().WithVersion(it.Version), it.Namespace}
		if !seen[l] {
			seen[l] = true
			lists = append(lists, l)
		}
	}
	bk.Close()
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	enc := json.NewEncoder(zw)
	written := 0
	for _, l := range lists {
		objects, err := dyn.Resource(l.gvr).Namespace(l.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatalf("listing %s in %q: %v", l.gvr, l.namespace, err)
		}
		for _, u := range objects.Items {
			if _, ok := u.GetAnnotations()[restore.SourceUIDAnnotation]; !ok {
				continue
			}
			for _, field := range []string{"creationTimestamp", "generation", "managedFields"} {
				unstructured.RemoveNestedField(u.Object, "metadata", field)
			}
			body, err := u.MarshalJSON()
			if err != nil {
				b.Fatal(err)
			}
			if err := enc.Encode(restoredLine{Resource: l.gvr.Resource, Object: body}); err != nil {
				b.Fatal(err)
			}
			written++
		}
	}
	// The two ceilings are of the same objects only if the restore made every one.
	if written != len(items) {
		b.Fatalf("the restore's server holds %d objects the restore made, the backup %d", written, len(items))
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// ceilingObjects are a ceiling's objects: namespaces and CRDs, created before its clock
// starts, and the rest, encoded, for a million decoded objects would not fit beside
// the server.
type ceilingObjects struct {
	first  []workload.Object
	others []workload.Request
}

// add adds u, of resource, with Services' cluster IPs left to the target, and less
// its owner references when dropOwners is set.
func (c *ceilingObjects) add(b *testing.B, u *unstructured.Unstructured, resource string, dropOwners bool) {
	b.Helper()
	if resource == "services" {
		unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
		unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
	}
	o := workload.Object{Unstructured: u, Resource: resource, Preferred: true}
	if workload.CreatedFirst(u.GetKind()) {
		c.first = append(c.first, o)
		return
	}
	r, err := workload.NewRequest(o, dropOwners)
	if err != nil {
		b.Fatal(err)
	}
	c.others = append(c.others, r)
}

// create makes a control plane of its own (serviceCluster's with opts), creates the
// first objects in it, then the others with benchWorkers goroutines in no order,
// unthrottled. It returns the time the others took, the requests its server served,
// and the CPU its processes used (serverCPU), with this process's over the others'
// creates as the client's (clientCPU).
func (c *ceilingObjects) create(b *testing.B, opts harness.Options, p serverProfile, side string) (time.Duration, requestCounts, map[string]time.Duration) {
	b.Helper()
	// A million encoded objects are held here while the server grows beside them: the
	// collector is held to a quarter above what is live, not twice it, so that the
	// three fit on the machine. The bodies are not scanned; it costs little.
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	ctx := context.Background()
	cl := serviceCluster(b, opts)
	defer cl.Stop()
	cfg := rest.CopyConfig(cl.Config)
	cfg.QPS, cfg.Burst = benchQPS, benchQPS
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for _, o := range c.first {
		if err := workload.Create(ctx, dyn, o, false); err != nil {
			b.Fatal(err)
		}
	}
	profiled := p.start(b, cl, side)
	start, before := time.Now(), processCPU(b)
	if err := workload.PostUnordered(ctx, cfg, c.others, benchWorkers); err != nil {
		profiled(false)
		b.Fatal(err)
	}
	took, client := time.Since(start), processCPU(b)-before
	profiled(true)
	cpu := serverCPU(b, cl)
	cpu[clientCPU] = client
	return took, serverRequests(b, cl), cpu
}

// clientCPU is the key of the client's CPU time beside the servers' (serverCPU's).
const clientCPU = "client"

// processCPU returns the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverProfile is how a benchmark watches each side's API server while it creates.
// Every step from the side's start it reads the server's counters and, at the side's
// end, logs each step's creates a second, CPU and latency a create, creates in flight and
// creates by resource (logSeries): where in a side its server's time goes, and whether
// its client kept it busy. With RESTOREGRAPH_BENCH_PROFILES=DIR it also samples the
// server's CPU from at after the creates start, for length, the same on every side so
// that the servers' profiles compare. A window that outlasts a side's creates samples a
// server with nothing left to do (and holds it, untimed, until the window ends): it is
// sized to end before the fastest side's. kube-apiserver runs /debug/pprof/ as a
// long-running request, so a window may be longer than its request timeout.
type serverProfile struct {
	name       string
	at, length time.Duration
	step       time.Duration
}

// start watches c's API server in the background, and returns what ends it, before c is
// stopped: with true it waits for the profile to be written and logs the series, with
// false (the side failed) it gives both up. Without a step it does nothing. What fails
// here is logged, not fatal: it is not what the benchmark measures.
func (p serverProfile) start(b *testing.B, c *harness.Cluster, side string) (end func(wait bool)) {
	if p.step == 0 {
		return func(bool) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	profiled := make(chan struct{})
	go func() {
		defer close(profiled)
		if dir := os.Getenv("RESTOREGRAPH_BENCH_PROFILES"); dir != "" {
			p.profile(ctx, b, c, side, dir)
		}
	}()
	series := make(chan []windowReading, 1)
	stop := make(chan struct{})
	go func() { series <- readEvery(ctx, c, p.step, stop) }()
	return func(wait bool) {
		if !wait {
			cancel()
		}
		close(stop)
		readings := <-series
		<-profiled
		cancel()
		if wait {
			logSeries(b, side, readings)
		}
	}
}

// profile samples c's API server's CPU over p's window into DIR/NAME.apiserver-SIDE.pprof,
// and logs the window's creates and CPU.
func (p serverProfile) profile(ctx context.Context, b *testing.B, c *harness.Cluster, side, dir string) {
	select {
	case <-time.After(p.at):
	case <-ctx.Done():
		return
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		b.Logf("profiling the %s side's API server: %v", side, err)
		return
	}
	before, berr := readWindow(ctx, c)
	data, err := cs.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", strconv.Itoa(int(p.length.Seconds()))).DoRaw(ctx)
	after, aerr := readWindow(ctx, c)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, p.name+".apiserver-"+side+".pprof"), data, 0o644)
	}
	if err = errors.Join(err, berr, aerr); err != nil {
		if ctx.Err() == nil {
			b.Logf("profiling the %s side's API server: %v", side, err)
		}
		return
	}
	d := after.since(before)
	b.Logf("the %s side's API server in its profile's window: %.0f creates, %.1f CPU s, %.2f ms each; %s",
		side, d.creates, d.cpu.Seconds(), d.cpu.Seconds()*1000/max(d.creates, 1), d.byResource(&after))
}

// readEvery reads c's windowReading now and every step until stop is closed, then once
// more; a reading that fails is left out.
func readEvery(ctx context.Context, c *harness.Cluster, step time.Duration, stop <-chan struct{}) []windowReading {
	var out []windowReading
	read := func() {
		if r, err := readWindow(ctx, c); err == nil {
			out = append(out, r)
		}
	}
	read()
	tick := time.NewTicker(step)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			read()
		case <-stop:
			read()
			return out
		case <-ctx.Done():
			return out
		}
	}
}

// logSeries logs what a side's API server did between each two readings.
func logSeries(b *testing.B, side string, readings []windowReading) {
	var lines []string
	for i := 1; i < len(readings); i++ {
		d := readings[i].since(readings[i-1])
		secs := d.took.Seconds()
		lines = append(lines, fmt.Sprintf("%3.0f–%3.0f s: %5.0f creates/s, %.2f cores, %.2f ms CPU (%.2f collecting) and %.1f ms latency each, %.1f in flight, %.2f GB live; %s",
			readings[i-1].at.Sub(readings[0].at).Seconds(), readings[i].at.Sub(readings[0].at).Seconds(),
			d.creates/secs, d.cpu.Seconds()/secs, d.cpu.Seconds()*1000/max(d.creates, 1), d.gcCPU*1000/max(d.creates, 1),
			d.latency*1000/max(d.creates, 1), d.latency/secs, d.live/1e9, d.byResource(nil)))
	}
	b.Logf("the %s side's API server, step by step:\n%s", side, strings.Join(lines, "\n"))
}

// windowReading is what an API server has done by a moment: the requests it has
// served (tally's), the seconds its creates took in all, and the CPU it has used; and,
// as its Go runtime tells them, the CPU its collector has used and its live heap, for
// a server whose heap nears its memory limit (envelopeServer's) collects more often.
type windowReading struct {
	at       time.Time
	requests requestCounts
	latency  float64
	cpu      time.Duration
	gcCPU    float64 // seconds, the runtime's estimate, brought up to date as each collection ends
	live     float64 // bytes live after the last collection
}

// readWindow reads c's windowReading.
func readWindow(ctx context.Context, c *harness.Cluster) (windowReading, error) {
	at := time.Now()
	const requests, took = "apiserver_request_total", "apiserver_request_duration_seconds_sum"
	const gcCPU, live = "go_cpu_classes_gc_total_cpu_seconds_total", "go_gc_heap_live_bytes"
	m, err := readMetrics(ctx, c, requests, took, gcCPU, live)
	if err != nil {
		return windowReading{}, err
	}
	var latency float64
	for _, s := range m[took] {
		if s.label("verb") == "POST" && s.label("subresource") == "" {
			latency += s.value
		}
	}
	cpu, err := c.CPU()
	r := windowReading{at: at, requests: tally(m[requests]), latency: latency, cpu: cpu["kube-apiserver"]}
	if s := m[gcCPU]; len(s) == 1 {
		r.gcCPU = s[0].value
	}
	if s := m[live]; len(s) == 1 {
		r.live = s[0].value
	}
	return r, err
}

// windowDelta is what an API server did between two readings.
type windowDelta struct {
	took     time.Duration
	creates  float64
	latency  float64
	cpu      time.Duration
	gcCPU    float64            // seconds
	live     float64            // bytes, at the second reading
	resource map[string]float64 // creates by resource
}

func (r windowReading) since(before windowReading) windowDelta {
	d := windowDelta{took: r.at.Sub(before.at), latency: r.latency - before.latency, cpu: r.cpu - before.cpu,
		gcCPU: r.gcCPU - before.gcCPU, live: r.live, resource: map[string]float64{}}
	for key, n := range r.requests {
		res, ok := strings.CutPrefix(key, "POST ")
		if n -= before.requests[key]; ok && !strings.Contains(res, "/") && n > 0 {
			d.creates += n
			d.resource[res] = n
		}
	}
	return d
}

// byResource lists d's creates by resource, and with end (the reading at d's end) each
// resource's creates by then, so what a side left for after.
func (d windowDelta) byResource(end *windowReading) string {
	var out []string
	for _, res := range slices.Sorted(maps.Keys(d.resource)) {
		s := fmt.Sprintf("%s %.0f", res, d.resource[res])
		if end != nil {
			s += fmt.Sprintf(" (%.0f by its end)", end.requests["POST "+res])
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// serverCPU is the CPU time c's processes (kube-apiserver, etcd, ...) have used since
// they started, by name: the server's side of a benchmark where it shares the machine
// with its client.
func serverCPU(b *testing.B, c *harness.Cluster) map[string]time.Duration {
	b.Helper()
	cpu, err := c.CPU()
	if err != nil {
		b.Fatal(err)
	}
	return cpu
}

// requestCounts is what an API server served since it started, by verb and resource
// (and subresource), from its apiserver_request_total counters: what a restore and its
// ceiling asked of their servers, to compare.
type requestCounts map[string]float64

// serverRequests reads c's API server's request counters.
func serverRequests(b *testing.B, c *harness.Cluster) requestCounts {
	b.Helper()
	return tally(counters(b, c, "apiserver_request_total"))
}

// tally sums apiserver_request_total's series by verb and resource (and subresource):
// "POST pods", "PUT leases", "GET deployments/status".
func tally(series []sample) requestCounts {
	counts := requestCounts{}
	for _, s := range series {
		key := s.label("verb") + " " + s.label("resource")
		if sub := s.label("subresource"); sub != "" {
			key += "/" + sub
		}
		counts[key] += s.value
	}
	return counts
}

// beside lists r's counts and others' side by side, by key, where any reached 100: the
// objects' creates and whatever else any side asked for in numbers.
func (r requestCounts) beside(others ...requestCounts) string {
	all := append([]requestCounts{r}, others...)
	var keys []string
	for _, c := range all {
		for k, v := range c {
			if v >= 100 && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		counts := make([]string, len(all))
		for i, c := range all {
			counts[i] = fmt.Sprintf("%.0f", c[k])
		}
		out = append(out, k+" "+strings.Join(counts, " / "))
	}
	return strings.Join(out, ", ")
}

// seconds lists the CPU seconds of the process named name in each of sides, as
// "a / b / c".
func seconds(name string, sides ...map[string]time.Duration) string {
	var out []string
	for _, s := range sides {
		out = append(out, fmt.Sprintf("%.1f", s[name].Seconds()))
	}
	return strings.Join(out, " / ")
}
