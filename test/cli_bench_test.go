package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/clirun"
	"github.com/restoregraph/restoregraph/bench/workload"
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

// BenchmarkIntegrationCLIRestore restores generated Velero backups into a real API
// server of its own with the restoregraph command, default flags (the server has API
// Priority and Fairness: the client sets no limit of its own), and reports the command's
// wall time, objects per second and peak resident memory; for apps also the unordered
// ceiling of the same objects in another fresh server in the same run (tarballCeiling)
// and the command's rate over it, logging beside each other the requests each server
// served and the CPU each API server and its etcd used. With
// RESTOREGRAPH_BENCH_PROFILES=DIR, the command writes its CPU and heap profiles there
// (NAME.cpu.pprof, NAME.heap.pprof):
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
	}{
		{name: "capi-fleet", write: func(f *os.File) (int, error) {
			gen := workload.CAPI(workload.CAPIOptions{Clusters: benchClusters, Seed: 1})
			return preferred(gen), gen.Write(f)
		}},
		{name: "apps", ceiling: true, write: func(f *os.File) (int, error) { return workload.WriteApps(f, cliObjects, 1) }},
		{name: "envelope", ceiling: true, server: envelopeServer, write: func(f *os.File) (int, error) {
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
			// With -benchtime Nx the two sides alternate, N times each; the ratio is
			// of their totals, and each pair's is logged. The CLI's objects/s and peak
			// RSS are its last run's.
			var last clirun.Run
			var cliTook, ceilingTook time.Duration
			runs := 0
			for b.Loop() {
				runs++
				b.StopTimer()
				c := serviceCluster(b, w.server)
				b.StartTimer()
				// The CLI's default flags: the server has API Priority and Fairness, so the
				// client sets no limit of its own.
				args := []string{"restore", "--backup", backup, "--kubeconfig", c.Kubeconfig}
				if dir := os.Getenv("RESTOREGRAPH_BENCH_PROFILES"); dir != "" {
					args = append(args, "--cpu-profile", filepath.Join(dir, w.name+".cpu.pprof"), "--heap-profile", filepath.Join(dir, w.name+".heap.pprof"))
				}
				last, err = clirun.Start(bin, args...)
				b.StopTimer()
				var sent requestCounts
				var cpu map[string]time.Duration
				if err == nil && w.ceiling {
					sent, cpu = serverRequests(b, c), serverCPU(b, c)
				}
				c.Stop()
				if err != nil {
					b.Fatal(err)
				}
				cliTook += last.Took
				if w.ceiling {
					took, ceilingSent, ceilingCPU := tarballCeiling(b, backup, w.server)
					ceilingTook += took
					b.Logf("cli %.1f s, ceiling %.1f s: %.3f", last.Took.Seconds(), took.Seconds(), took.Seconds()/last.Took.Seconds())
					b.Logf("requests the API server served, cli / ceiling: %s", sent.beside(ceilingSent))
					b.Logf("CPU seconds of the servers since they started, cli / ceiling: kube-apiserver %.1f / %.1f, etcd %.1f / %.1f",
						cpu["kube-apiserver"].Seconds(), ceilingCPU["kube-apiserver"].Seconds(), cpu["etcd"].Seconds(), ceilingCPU["etcd"].Seconds())
				}
				b.StartTimer()
			}
			last.Report(b, n)
			if ceilingTook > 0 {
				b.ReportMetric(float64(n*runs)/ceilingTook.Seconds(), "ceiling-objects/s")
				b.ReportMetric(ceilingTook.Seconds()/cliTook.Seconds(), "cli/ceiling")
			}
		})
	}
}

// serviceCluster starts a control plane of its own with opts and a Service range for
// 10,000 Services and more (a /16), untimed; the caller stops it.
func serviceCluster(b *testing.B, opts harness.Options) *harness.Cluster {
	b.Helper()
	opts.ServiceCIDR = "10.96.0.0/16"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := harness.StartWith(ctx, b.TempDir(), harness.Binaries{}, opts)
	if err != nil {
		b.Fatal(err)
	}
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
// ceiling a restore of the same objects is measured against. The rest are encoded before
// the clock starts, and held encoded: a million decoded objects would not fit beside the
// server. It returns the time the rest took, the requests its server served, and the CPU
// its API server and etcd used.
func tarballCeiling(b *testing.B, path string, opts harness.Options) (time.Duration, requestCounts, map[string]time.Duration) {
	b.Helper()
	ctx := context.Background()
	bk, err := archive.ReadFile(ctx, path, archive.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var first []workload.Object
	var others []workload.Request
	for _, it := range bk.Manifest().Items() {
		body, err := bk.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
		if err != nil {
			b.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(body); err != nil {
			b.Fatal(err)
		}
		if it.Resource == "services" {
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
		}
		o := workload.Object{Unstructured: u, Resource: it.Resource, Preferred: true}
		if workload.CreatedFirst(u.GetKind()) {
			first = append(first, o)
			continue
		}
		r, err := workload.NewRequest(o)
		if err != nil {
			b.Fatal(err)
		}
		others = append(others, r)
	}
	bk.Close()
	c := serviceCluster(b, opts)
	defer c.Stop()
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = benchQPS, benchQPS
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for _, o := range first {
		if err := workload.Create(ctx, dyn, o, false); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	if err := workload.PostUnordered(ctx, cfg, others, benchWorkers); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	return took, serverRequests(b, c), serverCPU(b, c)
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
	counts := requestCounts{}
	for _, s := range counters(b, c, "apiserver_request_total") {
		key := s.label("verb") + " " + s.label("resource")
		if sub := s.label("subresource"); sub != "" {
			key += "/" + sub
		}
		counts[key] += s.value
	}
	return counts
}

// beside lists r's counts and other's side by side, by key, where either reached 100:
// the objects' creates and whatever else either side asked for in numbers.
func (r requestCounts) beside(other requestCounts) string {
	var keys []string
	for k := range r {
		if r[k] >= 100 || other[k] >= 100 {
			keys = append(keys, k)
		}
	}
	for k := range other {
		if _, seen := r[k]; !seen && other[k] >= 100 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s %.0f / %.0f", k, r[k], other[k]))
	}
	return strings.Join(out, ", ")
}
