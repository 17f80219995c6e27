package graph

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/manifest"
)

// BenchmarkBuildShapes is BenchmarkBuildSortLongestPath over the shapes of
// workload.Graphs (but large bodies, whose count is too small to tell) at 100k and a
// million items, each manifest as the archive reads it from the backup WriteGraph
// writes. Each iteration is timed apart and the median reported per item
// (median-ns/item): the build's cost stays linear where a million's is within 1.2× of
// 100k's. Run it with -benchtime 10x or more.
func BenchmarkBuildShapes(b *testing.B) {
	for _, g := range workload.Graphs {
		if g.Value > 1<<10 {
			continue
		}
		for _, n := range []int{100_000, 1_000_000} {
			b.Run(fmt.Sprintf("shape=%s/items=%d", g.Name, n), func(b *testing.B) {
				m := shapeManifest(b, g, n)
				var took []time.Duration
				var built *Graph
				for b.Loop() {
					b.StopTimer() // a collection over the manifest's heap is not the graph's cost
					runtime.GC()
					b.StartTimer()
					start := time.Now()
					var err error
					if built, err = New(m, Options{}); err != nil {
						b.Fatal(err)
					}
					_ = built.LongestRemaining(nil)
					took = append(took, time.Since(start))
				}
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/float64(n), "median-ns/item")
				b.ReportMetric(float64(built.EdgeCount())/float64(n), "edges/item")
			})
		}
	}
}

// shapeManifest is the manifest of a backup of n objects in shape g, read by the archive
// as WriteGraph streams it, its items sorted outside the measurement.
func shapeManifest(b *testing.B, g workload.Graph, n int) *manifest.Manifest {
	b.Helper()
	pr, pw := io.Pipe()
	go func() {
		_, err := workload.WriteGraph(pw, n, 1, g)
		pw.CloseWithError(err)
	}()
	backup, err := archive.Read(context.Background(), pr, archive.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { backup.Close() })
	m := backup.Manifest()
	m.Items()
	return m
}
