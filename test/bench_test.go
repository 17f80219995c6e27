package test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/baseline"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/restore"
)

const (
	benchClusters = 122 // 122 workload clusters of 40 objects and 15 CRDs: 4,895 objects
	benchWorkers  = 16
	// benchQPS is the client rate limit of all three ways: none, as a user who raises
	// client-go's limits runs a restore, so that the server is the ceiling.
	benchQPS = -1
)

// BenchmarkIntegrationRestore restores about 5,000 objects into the real API server three
// ways, in one run and unthrottled, and reports objects per second and the ratios:
//
//   - ceiling: the objects created in parallel in no order, namespaces and CRDs made
//     beforehand, untimed;
//   - graph: restoregraph, 16 workers;
//   - velero: Velero's resource order, one object at a time.
//
// Two workloads: a Cluster API fleet (owner chains of Secrets, ConfigMaps and custom
// resources under 15 CRDs) and a wide one (5,000 ConfigMaps in 10 namespaces). Each way
// restores its own copy, in namespaces of its own.
func BenchmarkIntegrationRestore(b *testing.B) {
	for _, w := range []struct {
		name string
		gen  func(prefix string) *workload.Backup
	}{
		{"capi-fleet", func(prefix string) *workload.Backup {
			return workload.CAPI(workload.CAPIOptions{Clusters: benchClusters, Seed: seedOf(prefix), Prefix: prefix})
		}},
		{"wide", func(prefix string) *workload.Backup { return workload.Wide(prefix, 10, 500, seedOf(prefix)) }},
	} {
		b.Run(w.name, func(b *testing.B) { benchRestore(b, w.name, w.gen) })
	}
}

func benchRestore(b *testing.B, name string, gen func(prefix string) *workload.Backup) {
	var ceilingT, graphT, veleroT time.Duration
	var n int
	veleroPO, veleroRO := baseline.Velero(restore.PlanOptions{}, restore.RunOptions{})
	for i := 0; b.Loop(); i++ {
		ceilGen := gen(fmt.Sprintf("%s-ceil%d", name, i))
		n = preferred(ceilGen)
		ceilingT += ceiling(b, ceilGen)
		for _, mode := range []struct {
			prefix string
			po     restore.PlanOptions
			ro     restore.RunOptions
			took   *time.Duration
		}{
			{fmt.Sprintf("%s-graph%d", name, i), restore.PlanOptions{}, restore.RunOptions{Workers: benchWorkers}, &graphT},
			{fmt.Sprintf("%s-velero%d", name, i), veleroPO, veleroRO, &veleroT},
		} {
			backup := readBackup(b, gen(mode.prefix))
			c := cfg()
			c.QPS, c.Burst = benchQPS, benchQPS
			rep, err := restore.Run(context.Background(), backup, restoreTarget(b, c), mode.po, mode.ro)
			if err != nil || !rep.OK() {
				b.Fatalf("%s: %v %v", mode.prefix, err, rep.Summary)
			}
			*mode.took += rep.Finished.Sub(rep.Started)
		}
	}
	rate := func(d time.Duration) float64 { return float64(n*b.N) / d.Seconds() }
	b.ReportMetric(float64(n), "objects")
	b.ReportMetric(rate(ceilingT), "ceiling-objects/s")
	b.ReportMetric(rate(graphT), "graph-objects/s")
	b.ReportMetric(rate(veleroT), "velero-objects/s")
	b.ReportMetric(rate(graphT)/rate(ceilingT), "graph/ceiling")
	b.ReportMetric(rate(graphT)/rate(veleroT), "graph/velero")
}

func preferred(gen *workload.Backup) int {
	n := 0
	for _, o := range gen.Objects {
		if o.Preferred {
			n++
		}
	}
	return n
}

func readBackup(b *testing.B, gen *workload.Backup) *archive.Backup {
	var buf bytes.Buffer
	if err := gen.Write(&buf); err != nil {
		b.Fatal(err)
	}
	backup, err := archive.Read(context.Background(), &buf, archive.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return backup
}

// ceiling creates everything but namespaces and CRDs with benchWorkers goroutines, in
// no order; it returns the time that took.
func ceiling(b *testing.B, gen *workload.Backup) time.Duration {
	c := cfg()
	c.QPS, c.Burst = benchQPS, benchQPS
	dyn, err := dynamic.NewForConfig(c)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	first, rest := gen.Split()
	for _, o := range first {
		if err := workload.Create(ctx, dyn, o, false); err != nil && !isAlreadyExists(err) {
			b.Fatal(err)
		}
	}
	time.Sleep(5 * time.Second) // CRDs established
	start := time.Now()
	if err := workload.CreateUnordered(ctx, c, rest, benchWorkers); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}
