// Package toposort orders a DAG given by its adjacency lists and weighs each node by
// the path behind it: the one walk that the graph package (to plan) and the scheduler
// (to run any DAG it is given) both rely on.
package toposort

// DAG is a directed graph with nodes 0 to Len()-1. *graph.Graph and every
// scheduler.DAG satisfy it.
type DAG interface {
	Len() int
	Successors(node int64) []int32
	Predecessors(node int64) []int32
}

// Order returns dag's nodes in a topological order, each after all its predecessors:
// Kahn's algorithm, first in first out from the roots in ID order, so the order is
// the same for the same graph. A node on a cycle, or behind one, is never released and
// is not in the order: len(order) < dag.Len() means the graph has a cycle.
func Order(dag DAG) []int32 {
	n := dag.Len()
	indeg := make([]int32, n)
	order := make([]int32, 0, n)
	for v := range n {
		indeg[v] = int32(len(dag.Predecessors(int64(v))))
		if indeg[v] == 0 {
			order = append(order, int32(v))
		}
	}
	for head := 0; head < len(order); head++ {
		for _, v := range dag.Successors(int64(order[head])) {
			if indeg[v]--; indeg[v] == 0 {
				order = append(order, v)
			}
		}
	}
	return order
}

// Unordered returns whether each node is missing from order: those on or behind a
// cycle.
func Unordered(n int, order []int32) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = true
	}
	for _, u := range order {
		out[u] = false
	}
	return out
}

// LongestRemaining returns, for each node of order, its weight plus the heaviest path
// from it to a leaf: the critical path still ahead of it. order is what Order returned;
// a node not in it weighs 0. weight nil weighs every node 1.
func LongestRemaining(dag DAG, order []int32, weight func(node int32) float64) []float64 {
	lr := make([]float64, dag.Len())
	for i := len(order) - 1; i >= 0; i-- {
		u := order[i]
		best := 0.0
		for _, v := range dag.Successors(int64(u)) {
			best = max(best, lr[v])
		}
		w := 1.0
		if weight != nil {
			w = weight(u)
		}
		lr[u] = w + best
	}
	return lr
}
