package peers

import (
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"

	tfdag "github.com/hashicorp/terraform/dag"
	"github.com/hashicorp/terraform/tfdiags"
	heimdalr "github.com/heimdalr/dag"
	"github.com/restoregraph/restoregraph/scheduler"
	"github.com/stretchr/testify/require"
)

// appDAG is n nodes, each depending on up to two of the 50 nodes before it, as objects
// depend on owners and namespaces created shortly before them: about one edge per node.
type appDAG struct{ succ, pred [][]int32 }

func newAppDAG(n int, seed uint64) *appDAG {
	rng := rand.New(rand.NewPCG(seed, 1))
	d := &appDAG{succ: make([][]int32, n), pred: make([][]int32, n)}
	for v := 1; v < n; v++ {
		first := int32(-1)
		for range rng.IntN(3) {
			u := int32(v - 1 - rng.IntN(min(v, 50)))
			if u != first {
				first = u
				d.succ[u] = append(d.succ[u], int32(v))
				d.pred[v] = append(d.pred[v], u)
			}
		}
	}
	return d
}

func (d *appDAG) Len() int                                               { return len(d.succ) }
func (d *appDAG) Successors(n int64) []int32                             { return d.succ[n] }
func (d *appDAG) Predecessors(n int64) []int32                           { return d.pred[n] }
func noop(context.Context, *scheduler.Node) error                        { return nil }
func tfNoop(tfdag.Vertex) tfdiags.Diagnostics                            { return nil }
func flowNoop(*heimdalr.DAG, string, []heimdalr.FlowResult) (any, error) { return nil, nil }

func terraform(d *appDAG) *tfdag.AcyclicGraph {
	g := &tfdag.AcyclicGraph{}
	for v := range d.Len() {
		g.Add(v)
	}
	for v := range d.Len() {
		for _, u := range d.pred[v] {
			g.Connect(tfdag.BasicEdge(v, int(u))) // Terraform: the source depends on the target
		}
	}
	return g
}

func heimdalrDAG(t testing.TB, d *appDAG) *heimdalr.DAG {
	g := heimdalr.NewDAG()
	require.NoError(t, g.AddVertexByID("root", "root"))
	for v := range d.Len() {
		require.NoError(t, g.AddVertexByID(strconv.Itoa(v), v))
	}
	for v := range d.Len() {
		if len(d.pred[v]) == 0 { // DescendantsFlow walks from one vertex
			require.NoError(t, g.AddEdge("root", strconv.Itoa(v)))
		}
		for _, u := range d.pred[v] {
			require.NoError(t, g.AddEdge(strconv.Itoa(int(u)), strconv.Itoa(v)))
		}
	}
	return g
}

// BenchmarkOverhead walks DAGs of 10k, 100k and 1M nodes whose function does nothing,
// and reports ns and allocations per node for each walker. restoregraph runs 16
// workers; Terraform's walker and heimdalr's flow start one goroutine per node.
func BenchmarkOverhead(b *testing.B) {
	log.SetOutput(io.Discard) // Terraform's walker logs every visit at TRACE
	defer log.SetOutput(nil)
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		d := newAppDAG(n, 1)
		b.Run(fmt.Sprintf("restoregraph/nodes=%d", n), func(b *testing.B) {
			perNode(b, n, func() {
				if _, err := scheduler.Run(context.Background(), d, noop, scheduler.Options{Workers: 16}); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(fmt.Sprintf("terraform/nodes=%d", n), func(b *testing.B) {
			g := terraform(d)
			perNode(b, n, func() {
				if diags := g.Walk(tfNoop); diags.HasErrors() {
					b.Fatal(diags.Err())
				}
			})
		})
		b.Run(fmt.Sprintf("heimdalr/nodes=%d", n), func(b *testing.B) {
			g := heimdalrDAG(b, d)
			perNode(b, n, func() {
				if _, err := g.DescendantsFlow("root", nil, flowNoop); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

func perNode(b *testing.B, n int, walk func()) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		walk()
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N)/float64(n), "allocs/node")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(n), "B/node")
}
