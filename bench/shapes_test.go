package bench

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/clirun"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/graph"
	"github.com/restoregraph/restoregraph/manifest"
)

// shapeSizes are the sizes a shape is benchmarked at: 100k and a million objects, but
// for large bodies, whose million would be 64 GB: 1,000 and 10,000 of them.
func shapeSizes(g workload.Graph) []int {
	if g.Value > 1<<10 {
		return []int{1_000, 10_000}
	}
	return scaleSizes
}

// graphTarball is appsTarball for a backup of n objects in shape g.
func graphTarball(b *testing.B, g workload.Graph, n int, carried bool) string {
	b.Helper()
	if carried {
		return cachedBackup(b, fmt.Sprintf("%s-%d-manifest-v1.tar.gz", g.Name, n), withManifest(graphTarball(b, g, n, false)))
	}
	return cachedBackup(b, fmt.Sprintf("%s-%d-plain-v1.tar.gz", g.Name, n), func(w io.Writer) error {
		_, err := workload.WriteGraph(w, n, 1, g)
		return err
	})
}

// BenchmarkShapes plans and restores, with the command and the embedded API server
// (default flags, no memory limit set), backups of each shape of workload.Graphs with
// and without a manifest, and in the same iteration inflates the same file with gzip -dc
// and with Go's compress/gzip: the floor of any read. It reports each step's seconds and
// the command's peak resident MiB, and plan/gzip-dc and restore/gzip-dc, ratios from the
// same run; and the restore again with GOMEMLIMIT=900MiB (limited-s, limited-MiB): what
// a soft memory limit under 1 GiB costs. ns/op is the plan and the two restores.
func BenchmarkShapes(b *testing.B) {
	gzipCmd, err := exec.LookPath("gzip")
	if err != nil {
		b.Skip("no gzip command")
	}
	for _, g := range workload.Graphs {
		for _, n := range shapeSizes(g) {
			for _, carried := range []bool{false, true} {
				b.Run(fmt.Sprintf("shape=%s/objects=%d/manifest=%t", g.Name, n, carried), func(b *testing.B) {
					path := graphTarball(b, g, n, carried)
					cliBinary(b)
					var gzipDC, goInflate time.Duration
					var plan, restored, limited clirun.Run
					for b.Loop() {
						b.StopTimer()
						gzipDC = timed(func() {
							if err := exec.Command(gzipCmd, "-dc", path).Run(); err != nil {
								b.Fatal(err)
							}
						})
						goInflate = timed(func() { inflate(b, path, goGzip) })
						b.StartTimer()
						plan = runCLI(b, "plan", "--backup", path, "--embedded", "-o", "text")
						restored = runCLI(b, "restore", "--backup", path, "--embedded")
						var err error
						if limited, err = clirun.StartEnv([]string{"GOMEMLIMIT=900MiB"}, cliBinary(b), "restore", "--backup", path, "--embedded"); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(gzipDC.Seconds(), "gzip-dc-s")
					b.ReportMetric(goInflate.Seconds(), "go-inflate-s")
					b.ReportMetric(plan.Took.Seconds(), "plan-s")
					b.ReportMetric(float64(plan.MaxRSS)/(1<<20), "plan-MiB")
					b.ReportMetric(plan.Took.Seconds()/gzipDC.Seconds(), "plan/gzip-dc")
					b.ReportMetric(restored.Took.Seconds(), "restore-s")
					b.ReportMetric(float64(restored.MaxRSS)/(1<<20), "restore-MiB")
					b.ReportMetric(restored.Took.Seconds()/gzipDC.Seconds(), "restore/gzip-dc")
					b.ReportMetric(limited.Took.Seconds(), "limited-s")
					b.ReportMetric(float64(limited.MaxRSS)/(1<<20), "limited-MiB")
				})
			}
		}
	}
}

// BenchmarkBuildShapes is graph's BenchmarkBuildSortLongestPath over the shapes of
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
				var built *graph.Graph
				for b.Loop() {
					b.StopTimer() // a collection over the manifest's heap is not the graph's cost
					runtime.GC()
					b.StartTimer()
					start := time.Now()
					var err error
					if built, err = graph.New(m, graph.Options{}); err != nil {
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
