package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

// appDAG makes n nodes where each node depends on up to two of the 50 nodes before it,
// as objects depend on owners and namespaces created shortly before them. About 1.5
// edges per node.
func appDAG(rng *rand.Rand, n int) *dag {
	var edges [][2]int
	for v := 1; v < n; v++ {
		for range rng.IntN(3) {
			u := v - 1 - rng.IntN(min(v, 50))
			edges = append(edges, [2]int{u, v})
		}
	}
	return newDAG(n, dedupe(edges)...)
}

func dedupe(edges [][2]int) [][2]int {
	seen := map[[2]int]bool{}
	out := edges[:0]
	for _, e := range edges {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// BenchmarkOverhead runs 100k nodes whose function does nothing: what remains is the
// scheduler's own cost per node.
func BenchmarkOverhead(b *testing.B) {
	const n = 100_000
	d := appDAG(rand.New(rand.NewPCG(1, 1)), n)
	noop := func(context.Context, *Node) error { return nil }
	for _, workers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("nodes=%d/workers=%d", n, workers), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Run(context.Background(), d, noop, Options{Workers: workers}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/node")
		})
	}
}

// BenchmarkMakespan runs nodes that sleep for fixed-seed durations and compares the
// makespan with the lower bound max(critical path, total work / workers), computed
// from the durations the nodes actually slept, and with a level-by-level run of the
// same DAG (the way cli-utils and Argo CD waves run), in the same process.
func BenchmarkMakespan(b *testing.B) {
	const n, workers = 300, 8
	rng := rand.New(rand.NewPCG(7, 7))
	d := appDAG(rng, n)
	durations := make([]time.Duration, n)
	for i := range durations {
		durations[i] = time.Duration(2+rng.IntN(30)) * time.Millisecond
	}
	sleep := func(_ context.Context, nd *Node) error { time.Sleep(durations[nd.ID()]); return nil }

	var graphMakespan, bound, levelMakespan time.Duration
	for b.Loop() {
		start := time.Now()
		rep, err := Run(context.Background(), d, sleep, Options{Workers: workers,
			Weight: func(id int64) float64 { return float64(durations[id]) }})
		if err != nil {
			b.Fatal(err)
		}
		graphMakespan += time.Since(start)
		actual := make([]float64, n)
		var total float64
		for i, r := range rep.Results {
			actual[i] = float64(r.End.Sub(r.Start))
			total += actual[i]
		}
		cp := 0.0
		lrs, _ := longestRemaining(d, func(id int64) float64 { return actual[id] })
		for _, lr := range lrs {
			cp = max(cp, lr)
		}
		bound += time.Duration(max(cp, total/workers))

		start = time.Now()
		runLevels(d, workers, func(id int) { time.Sleep(durations[id]) })
		levelMakespan += time.Since(start)
	}
	b.ReportMetric(float64(graphMakespan)/float64(bound), "makespan/bound")
	b.ReportMetric(float64(levelMakespan)/float64(graphMakespan), "levels/graph")
	b.ReportMetric(float64(graphMakespan.Milliseconds())/float64(b.N), "graph-ms")
	b.ReportMetric(float64(levelMakespan.Milliseconds())/float64(b.N), "levels-ms")
}

// runLevels runs the DAG level by level: every node of a level, at most workers at
// once, then a wait for the whole level before the next.
func runLevels(d *dag, workers int, fn func(int)) {
	level := make([]int, d.Len())
	var levels [][]int
	for u := range d.Len() { // nodes are numbered so that edges go forward
		for _, p := range d.pred[u] {
			level[u] = max(level[u], level[p]+1)
		}
		for len(levels) <= level[u] {
			levels = append(levels, nil)
		}
		levels[level[u]] = append(levels[level[u]], u)
	}
	for _, l := range levels {
		var g errgroup.Group
		g.SetLimit(workers)
		for _, u := range l {
			g.Go(func() error { fn(u); return nil })
		}
		g.Wait()
	}
}
