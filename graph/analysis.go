package graph

import (
	"slices"

	"github.com/restoregraph/restoregraph/internal/toposort"
)

// Order returns every unblocked node in a topological order: each node after all its
// predecessors. It is deterministic for a given manifest and options.
func (g *Graph) Order() []*Node {
	out := make([]*Node, len(g.at))
	for i, id := range g.at {
		out[i] = g.node(id)
	}
	return out
}

// Blocked returns the nodes on a cycle or behind one, in ID order. They are in no order
// and in no analysis.
func (g *Graph) Blocked() []*Node {
	var out []*Node
	for i, p := range g.pos {
		if p < 0 {
			out = append(out, g.node(int32(i)))
		}
	}
	return out
}

// IsBlocked reports whether node id is on or behind a cycle.
func (g *Graph) IsBlocked(id int64) bool { return g.pos[id] < 0 }

// Successors returns the IDs of id's successors, ascending. The slice is shared.
func (g *Graph) Successors(id int64) []int32 { return g.succ.list(int32(id)) }

// Predecessors returns the IDs of id's predecessors, ascending. The slice is shared.
func (g *Graph) Predecessors(id int64) []int32 { return g.pred.list(int32(id)) }

// Levels returns each node's level, as level-based tools (cli-utils, Argo CD waves)
// would run it: 0 for roots, else one more than the highest level of its predecessors.
// Blocked nodes have level -1.
func (g *Graph) Levels() []int {
	level := make([]int, g.Len())
	for i := range level {
		level[i] = -1
	}
	for _, u := range g.at {
		l := 0
		for _, p := range g.pred.list(u) {
			l = max(l, level[p]+1)
		}
		level[u] = l
	}
	return level
}

// Descendants returns the IDs of every node reachable from id, ascending: what a failure
// of id holds back.
func (g *Graph) Descendants(id int64) []int64 {
	seen := map[int32]bool{}
	stack := []int32{int32(id)}
	var out []int64
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, v := range g.succ.list(u) {
			if !seen[v] {
				seen[v] = true
				out = append(out, int64(v))
				stack = append(stack, v)
			}
		}
	}
	slices.Sort(out)
	return out
}

// LongestRemaining returns, for every node, the heaviest path from it to a leaf,
// counting its own weight: the scheduler's priority. weight gives each node's expected
// duration; nil weighs every object 1 and barriers 0. Blocked nodes get 0.
func (g *Graph) LongestRemaining(weight func(*Node) float64) []float64 {
	if weight == nil {
		// Barriers are the nodes after the items: told apart without reading a node.
		return toposort.LongestRemaining(g, g.at, func(u int32) float64 {
			if int(u) < len(g.nodes) {
				return 1
			}
			return 0
		})
	}
	return toposort.LongestRemaining(g, g.at, func(u int32) float64 { return weight(g.node(u)) })
}

// CriticalPath returns the heaviest path through the graph and its total weight.
// Ties go to the lower node ID.
func (g *Graph) CriticalPath(weight func(*Node) float64) ([]*Node, float64) {
	lr := g.LongestRemaining(weight)
	var path []*Node
	next := int32(-1)
	for _, u := range g.at {
		if g.pred.span[u].len() == 0 && (next < 0 || lr[u] > lr[next] || lr[u] == lr[next] && u < next) {
			next = u
		}
	}
	if next < 0 {
		return nil, 0
	}
	total := lr[next]
	for next >= 0 {
		path = append(path, g.node(next))
		u := next
		next = -1
		for _, v := range g.succ.list(u) {
			if next < 0 || lr[v] > lr[next] {
				next = v
			}
		}
	}
	return path, total
}
