// Package strategy runs one restore DAG under the scheduling strategies restore tools
// use — restoregraph's critical-path priority, the same scheduler without priority,
// level by level, kapp's batches with a readiness poll, one object at a time — with
// the same latency model, so that their makespans can be compared in one process.
//
// A node's work is its create latency followed by its readiness latency (a CRD is
// usable once established, seconds after its create). Every strategy sleeps both, as
// restoregraph's own gates do; kapp differs only in when it notices readiness.
package strategy

import (
	"math/bits"
	"math/rand/v2"
	"time"

	"github.com/restoregraph/restoregraph/graph"
)

// Latency is what one object costs a restore: the create call, then the wait until
// the object is usable by what depends on it.
type Latency struct{ Create, Ready time.Duration }

// Latencies is the model per kind, at real scale, from the real API server of the
// integration module: creates take milliseconds, a CRD seconds to be established.
var Latencies = map[string]Latency{
	"CustomResourceDefinition": {20 * time.Millisecond, 2 * time.Second},
	"Namespace":                {10 * time.Millisecond, 0}, // Active as created
	"Service":                  {8 * time.Millisecond, 0},
	"Deployment":               {8 * time.Millisecond, 0},
	"ReplicaSet":               {8 * time.Millisecond, 0},
	"Pod":                      {10 * time.Millisecond, 0},
	"PersistentVolumeClaim":    {8 * time.Millisecond, 0},
}

// DefaultLatency is the model of every kind Latencies does not name.
var DefaultLatency = Latency{Create: 5 * time.Millisecond}

// LatencyOf returns the model of kind; "" (a graph's barrier node) costs nothing.
func LatencyOf(kind string) Latency {
	if kind == "" {
		return Latency{}
	}
	if l, ok := Latencies[kind]; ok {
		return l
	}
	return DefaultLatency
}

// Workload is a DAG whose nodes are numbered in a topological order, with each node's
// kind and latency. It satisfies scheduler.DAG.
type Workload struct {
	Name       string
	Kinds      []string
	Latency    []Latency // scaled
	succ, pred [][]int32
}

func (w *Workload) Len() int                     { return len(w.Kinds) }
func (w *Workload) Successors(n int64) []int32   { return w.succ[n] }
func (w *Workload) Predecessors(n int64) []int32 { return w.pred[n] }
func (w *Workload) cost(n int) time.Duration     { return w.Latency[n].Create + w.Latency[n].Ready }
func (w *Workload) addEdge(u, v int32) {
	w.succ[u] = append(w.succ[u], v)
	w.pred[v] = append(w.pred[v], u)
}

func newWorkload(name string, kinds []string, scale float64) *Workload {
	w := &Workload{Name: name, Kinds: kinds, Latency: make([]Latency, len(kinds)),
		succ: make([][]int32, len(kinds)), pred: make([][]int32, len(kinds))}
	for i, k := range kinds {
		l := LatencyOf(k)
		w.Latency[i] = Latency{time.Duration(float64(l.Create) * scale), time.Duration(float64(l.Ready) * scale)}
	}
	return w
}

// FromGraph takes a restore graph as restoregraph builds it from a backup: its
// objects, its barrier nodes (which cost nothing) and its edges.
func FromGraph(name string, g *graph.Graph, scale float64) *Workload {
	order := g.Order()
	pos := make([]int32, g.Len())
	kinds := make([]string, len(order))
	for i, n := range order {
		pos[n.ID()] = int32(i)
		if n.Item != nil {
			kinds[i] = n.Item.Kind
		}
	}
	w := newWorkload(name, kinds, scale)
	for _, n := range order {
		for _, v := range g.Successors(n.ID()) {
			w.addEdge(pos[n.ID()], pos[v])
		}
	}
	return w
}

// Layered is a random DAG of layers×width nodes: each node depends on one to three
// nodes of the layers above it, and its kind is drawn from an application's mix.
func Layered(seed uint64, layers, width int, scale float64) *Workload {
	rng := rand.New(rand.NewPCG(seed, 19))
	mix := []string{"ConfigMap", "Secret", "Deployment", "Service", "Pod", "ServiceAccount", "Role", "RoleBinding"}
	kinds := make([]string, layers*width)
	for i := range kinds {
		kinds[i] = mix[rng.IntN(len(mix))]
		if i < width && rng.IntN(4) == 0 {
			kinds[i] = "CustomResourceDefinition"
		}
	}
	w := newWorkload("layered", kinds, scale)
	for l := 1; l < layers; l++ {
		for x := range width {
			v := int32(l*width + x)
			seen := map[int32]bool{}
			for range 1 + rng.IntN(3) {
				u := int32(rng.IntN(l * width))
				if !seen[u] {
					seen[u] = true
					w.addEdge(u, v)
				}
			}
		}
	}
	return w
}

// Chain is n objects each owned by the one before it, under a Namespace: no two can
// be created at once.
func Chain(n int, scale float64) *Workload {
	kinds := make([]string, n)
	kinds[0] = "Namespace"
	for i := 1; i < n; i++ {
		kinds[i] = []string{"Deployment", "ReplicaSet", "Pod", "ConfigMap"}[i%4]
	}
	w := newWorkload("chain", kinds, scale)
	for i := 1; i < n; i++ {
		w.addEdge(int32(i-1), int32(i))
	}
	return w
}

// FanOut is one CRD and n custom resources of its kind, each of which waits for it.
func FanOut(n int, scale float64) *Workload {
	kinds := make([]string, n+1)
	kinds[0] = "CustomResourceDefinition"
	for i := 1; i <= n; i++ {
		kinds[i] = "Widget"
	}
	w := newWorkload("fan-out", kinds, scale)
	for i := 1; i <= n; i++ {
		w.addEdge(0, int32(i))
	}
	return w
}

// levels returns the nodes of each level: a node's level is one more than its
// deepest predecessor's.
func (w *Workload) levels() [][]int32 {
	level := make([]int, w.Len())
	var out [][]int32
	for u := range w.Len() { // nodes are numbered so that edges go forward
		for _, p := range w.pred[u] {
			level[u] = max(level[u], level[p]+1)
		}
		for len(out) <= level[u] {
			out = append(out, nil)
		}
		out[level[u]] = append(out[level[u]], int32(u))
	}
	return out
}

// LowerBound is the longest of three bounds no schedule with that many workers can
// beat, for the durations each node actually took: the critical path; the total work
// divided among the workers; and, for every node, the time it can be usable at the
// earliest plus its descendants' work divided among the workers (a CRD and its custom
// resources: none of them starts before the CRD is established). It costs n²/64 words.
func (w *Workload) LowerBound(took []time.Duration, workers int) time.Duration {
	n := w.Len()
	finish := make([]time.Duration, n)
	var bound, total time.Duration
	for u := range n {
		var start time.Duration
		for _, p := range w.pred[u] {
			start = max(start, finish[p])
		}
		finish[u] = start + took[u]
		bound = max(bound, finish[u])
		total += took[u]
	}
	bound = max(bound, total/time.Duration(workers))
	words := (n + 63) / 64
	desc := make([]uint64, n*words) // desc[u*words:] is the set of u's descendants
	for u := n - 1; u >= 0; u-- {
		set := desc[u*words : (u+1)*words]
		for _, v := range w.succ[u] {
			set[v/64] |= 1 << (v % 64)
			for i, x := range desc[int(v)*words : (int(v)+1)*words] {
				set[i] |= x
			}
		}
		var work time.Duration
		for i, x := range set {
			for ; x != 0; x &= x - 1 {
				work += took[i*64+bits.TrailingZeros64(x)]
			}
		}
		bound = max(bound, finish[u]+work/time.Duration(workers))
	}
	return bound
}
