package bench

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/baseline"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/restore"
	"k8s.io/client-go/dynamic"
)

const (
	clusters = 20
	workers  = 16
	latency  = 5 * time.Millisecond // mean per request, as a real API server's creates take
)

func server(b *testing.B) *memcluster.Server {
	s, err := memcluster.StartServer(memcluster.Options{GC: true, EstablishDelay: 100 * time.Millisecond,
		Latency: memcluster.UniformLatency(1, latency/2, latency*3/2)})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkRestore restores the same Cluster API fleet three ways against the embedded
// API server with per-request latency, and reports objects per second and the ratios
// between them, measured in the same run:
//
//   - graph: restoregraph, 16 workers;
//   - velero: Velero's resource order, one object at a time;
//   - ceiling: every object but the namespaces and CRDs created in parallel by 16
//     workers in no order at all (the namespaces and CRDs made beforehand, untimed):
//     the throughput no ordered restore can exceed.
func BenchmarkRestore(b *testing.B) {
	var buf bytes.Buffer
	gen := workload.CAPI(workload.CAPIOptions{Clusters: clusters, Seed: 1})
	if err := gen.Write(&buf); err != nil {
		b.Fatal(err)
	}
	backup, err := archive.Read(context.Background(), bytes.NewReader(buf.Bytes()), archive.Options{})
	if err != nil {
		b.Fatal(err)
	}
	n := backup.Manifest().Len()
	var graphT, veleroT, ceilingT time.Duration
	var velero struct {
		po restore.PlanOptions
		ro restore.RunOptions
	}
	velero.po, velero.ro = baseline.Velero(restore.PlanOptions{}, restore.RunOptions{})
	for b.Loop() {
		for _, mode := range []struct {
			name string
			po   restore.PlanOptions
			ro   restore.RunOptions
			took *time.Duration
		}{
			{"graph", restore.PlanOptions{}, restore.RunOptions{Workers: workers}, &graphT},
			{"velero", velero.po, velero.ro, &veleroT},
		} {
			s := server(b)
			tgt, err := restore.NewTarget(s.Config())
			if err != nil {
				b.Fatal(err)
			}
			rep, err := restore.Run(context.Background(), backup, tgt, mode.po, mode.ro)
			if err != nil || !rep.OK() {
				b.Fatalf("%s: %v %v", mode.name, err, rep.Summary)
			}
			*mode.took += rep.Finished.Sub(rep.Started)
			s.Close()
		}
		ceilingT += ceiling(b, gen)
	}
	rate := func(d time.Duration) float64 { return float64(n*b.N) / d.Seconds() }
	b.ReportMetric(rate(graphT), "graph-objects/s")
	b.ReportMetric(rate(veleroT), "velero-objects/s")
	b.ReportMetric(rate(ceilingT), "ceiling-objects/s")
	b.ReportMetric(rate(graphT)/rate(ceilingT), "graph/ceiling")
	b.ReportMetric(rate(graphT)/rate(veleroT), "graph/velero")
	b.ReportMetric(float64(n), "objects")
}

// ceiling creates the backup's objects, bar namespaces and CRDs, with no order at all.
func ceiling(b *testing.B, gen *workload.Backup) time.Duration {
	s := server(b)
	defer s.Close()
	dyn, err := dynamic.NewForConfig(s.Config())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	first, rest := gen.Split()
	for _, o := range first {
		if err := workload.Create(ctx, dyn, o, false); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // CRDs established
	start := time.Now()
	if err := workload.CreateUnordered(ctx, s.Config(), rest, workers); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}
