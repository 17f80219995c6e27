// Package toposort orders a DAG given by its adjacency lists and weighs each node by
// the path behind it: the one walk that the graph package (to plan) and the scheduler
// (to run any DAG it is given) both rely on.
package toposort

import "slices"

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
	for v := range n {
		indeg[v] = int32(len(dag.Predecessors(int64(v))))
	}
	return OrderFrom(dag, indeg, nil)
}

// OrderFrom is Order for a caller that has dag's in-degrees at hand, node v's at
// indeg[v]: it need not read every node's predecessors for them. It uses indeg up:
// on return indeg[v] is v's position in the order, or -1 for a node not in it. A node's
// count and its position share a place, taken as it is released, so that the sort
// writes no array of positions of its own in a pass of random writes after it.
//
// The order is written over buf when it has room for every node (a caller's array it
// has done with), else into a new array.
func OrderFrom(dag DAG, indeg, buf []int32) []int32 {
	order := buf[:0]
	if cap(buf) < len(indeg) {
		order = make([]int32, 0, len(indeg))
	}
	for v, d := range indeg {
		if d == 0 {
			indeg[v] = int32(len(order))
			order = append(order, int32(v))
		}
	}
	// A released node is never counted down again: every one of its predecessors has
	// been taken off the queue.
	for head := 0; head < len(order); head++ {
		for _, v := range dag.Successors(int64(order[head])) {
			if indeg[v]--; indeg[v] == 0 {
				indeg[v] = int32(len(order))
				order = append(order, v)
			}
		}
	}
	if len(order) < len(indeg) {
		for v, out := range Unordered(len(indeg), order) {
			if out {
				indeg[v] = -1
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
//
// The nodes are weighed in a topological order of the graph turned around, not by
// walking order backwards. Each node's successors are counted, and a node is weighed
// once the last of them has been; the leaves are taken in ascending ID order, and a
// node so released is taken next, last in first out. That meets the nodes where their
// neighbours are: on a backup, a namespace's objects are weighed together, and the
// leaves between them in one ascending run. Order's first in first out would take each
// depth across the whole graph in turn, and the walk back two interleaved descending
// runs, each step a miss of the cache at a million nodes. A node's weight is taken
// once, and the maxima are the same whatever the order they are taken in.
func LongestRemaining(dag DAG, order []int32, weight func(node int32) float64) []float64 {
	n := dag.Len()
	lr := make([]float64, n)
	// Only the ordered nodes are weighed, and each counts only its ordered successors:
	// those on or behind a cycle weigh 0 and are never released. A predecessor of an
	// ordered node is ordered, for what lies behind a cycle is not.
	var ordered []bool
	if len(order) < n {
		ordered = make([]bool, n)
		for _, u := range order {
			ordered[u] = true
		}
	}
	outDeg := make([]int32, n)
	// Every ordered node is pushed once: the leaves first, then each as it is released.
	stack := make([]int32, 0, len(order))
	for u := range n {
		if ordered != nil && !ordered[u] {
			continue
		}
		succ := dag.Successors(int64(u))
		d := int32(len(succ))
		if ordered != nil {
			d = 0
			for _, v := range succ {
				if ordered[v] {
					d++
				}
			}
		}
		outDeg[u] = d
		if d == 0 {
			stack = append(stack, int32(u))
		}
	}
	slices.Reverse(stack) // the lowest leaf on top
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		w := 1.0
		if weight != nil {
			w = weight(v)
		}
		l := w + lr[v] // lr[v] holds the heaviest of its successors' paths
		lr[v] = l
		for _, p := range dag.Predecessors(int64(v)) {
			lr[p] = max(lr[p], l)
			if outDeg[p]--; outDeg[p] == 0 {
				stack = append(stack, p)
			}
		}
	}
	return lr
}
