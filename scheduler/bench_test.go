package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
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
