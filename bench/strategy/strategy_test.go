package strategy

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/graph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scale shrinks the model so a CRD is established in 400 ms instead of 2 s, and the
// shortest create (a ConfigMap) takes 1 ms: the timer resolution of the machines we
// run on, below which a sleep overshoots by more than it lasts.
const scale = 0.2

func capiWorkload(t testing.TB) *Workload {
	var buf bytes.Buffer
	require.NoError(t, workload.CAPI(workload.CAPIOptions{Clusters: 20, Seed: 1}).Write(&buf))
	b, err := archive.Read(context.Background(), &buf, archive.Options{})
	require.NoError(t, err)
	g, err := graph.New(b.Manifest(), graph.Options{Rules: []graph.Rule{graph.ClusterAPI}})
	require.NoError(t, err)
	return FromGraph("capi-fleet", g, scale)
}

// shopWorkload is the application namespace a real cluster's controllers wrote: the
// fixture of testdata/backups.
func shopWorkload(t testing.TB) *Workload {
	b, err := archive.ReadFile(context.Background(), "../../testdata/backups/shop-k8s-1.37.tar.gz", archive.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	g, err := graph.New(b.Manifest(), graph.Options{})
	require.NoError(t, err)
	return FromGraph("app-namespace", g, scale)
}

func workloads(t testing.TB) []*Workload {
	return []*Workload{capiWorkload(t), shopWorkload(t), Layered(3, 12, 40, scale), Chain(200, scale), FanOut(1000, scale)}
}

const workers = 16

var poll = time.Duration(float64(3*time.Second) * scale)

// TestStrategiesRespectDependencies checks what makes the comparison fair: every
// strategy runs every node once and none before what it depends on is usable.
func TestStrategiesRespectDependencies(t *testing.T) {
	w := Layered(5, 4, 6, 0.01)
	w.Kinds[0], w.Latency[0] = "CustomResourceDefinition", Latency{time.Millisecond, 5 * time.Millisecond}
	for _, s := range Strategies(4, 2*time.Millisecond) {
		t.Run(s.Name, func(t *testing.T) {
			r := s.Run(w, s.Workers)
			for v := range w.Len() {
				require.False(t, r.Start[v].IsZero(), "node %d never ran", v)
				for _, u := range w.pred[v] {
					assert.False(t, r.Start[v].Before(r.End[u]), "node %d started before %d was usable", v, u)
				}
			}
			assert.GreaterOrEqual(t, r.Makespan, w.LowerBound(r.Took(), s.Workers))
		})
	}
}

func TestLowerBound(t *testing.T) {
	w := Chain(3, 0)
	w.addEdge(0, 2)
	ms := []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}
	assert.Equal(t, 6*time.Millisecond, w.LowerBound(ms, 1), "one worker: all the work")
	assert.Equal(t, 6*time.Millisecond, w.LowerBound(ms, 4), "a chain: its whole length")
	f := FanOut(8, 0)
	f.addEdge(1, 2)
	took := make([]time.Duration, 9)
	for i := range took {
		took[i] = time.Millisecond
	}
	assert.Equal(t, 3*time.Millisecond, f.LowerBound(took, 8), "critical path 0→1→2")
	assert.Equal(t, 5*time.Millisecond, f.LowerBound(took, 2), "the CRD, then 8 ms of work on 2 workers")
	assert.Equal(t, 4500*time.Microsecond, Layered(1, 1, 9, 0).LowerBound(took, 2), "9 ms of work on 2 workers")
	assert.Equal(t, [][]int32{{0}, {1, 3, 4, 5, 6, 7, 8}, {2}}, f.levels())
}

// BenchmarkStrategies runs every strategy on every workload, in the same run, and
// reports for each its makespan, its makespan over the lower bound max(critical path,
// work / 16 workers) and restoregraph's speed-up over it:
//
//	go test -run '^$' -bench Strategies -benchtime 3x ./bench/strategy
func BenchmarkStrategies(b *testing.B) {
	for _, w := range workloads(b) {
		b.Run(w.Name, func(b *testing.B) {
			strategies := Strategies(workers, poll)
			makespan := make([]time.Duration, len(strategies))
			var bound time.Duration
			for b.Loop() {
				for i, s := range strategies {
					r := s.Run(w, s.Workers)
					makespan[i] += r.Makespan
					if i == 0 {
						bound += w.LowerBound(r.Took(), workers)
					}
				}
			}
			for i, s := range strategies {
				b.ReportMetric(float64(makespan[i].Microseconds())/1000/float64(b.N), s.Name+"-ms")
				b.ReportMetric(float64(makespan[i])/float64(bound), s.Name+"/bound")
			}
			b.ReportMetric(float64(bound.Microseconds())/1000/float64(b.N), "bound-ms")
			b.ReportMetric(float64(makespan[len(makespan)-1])/float64(makespan[0]), "speedup-vs-velero")
			b.ReportMetric(float64(w.Len()), "nodes")
		})
	}
}
