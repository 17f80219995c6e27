package graph

import (
	"fmt"
	"slices"
	"strings"

	gonum "gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/topo"
)

// Cycle is one dependency cycle: Nodes[i] → Nodes[i+1] for Kinds[i], and the last node
// back to the first.
type Cycle struct {
	Nodes []*Node
	Kinds []EdgeKind
}

func (c Cycle) String() string {
	var b strings.Builder
	for i, n := range c.Nodes {
		fmt.Fprintf(&b, "%s -[%s]-> ", n, c.Kinds[i])
	}
	b.WriteString(c.Nodes[0].String())
	return b.String()
}

// CycleError reports the dependency cycles of a graph: one cycle per strongly connected
// component, and how many objects they block (those on a cycle and those behind one).
type CycleError struct {
	Cycles  []Cycle
	Blocked int
}

// maxCycleMessage caps Error's length; Cycles holds everything.
const maxCycleMessage = 2000

func (e *CycleError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d dependency cycle(s) block %d object(s): ", len(e.Cycles), e.Blocked)
	for i, c := range e.Cycles {
		s := c.String()
		if b.Len()+len(s) > maxCycleMessage {
			fmt.Fprintf(&b, "… and %d more", len(e.Cycles)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(s)
	}
	return b.String()
}

// cycleError finds one cycle in each strongly connected component with more than one
// node (self-edges are never added), with gonum's Tarjan.
func (g *Graph) cycleError() *CycleError {
	e := &CycleError{}
	for _, p := range g.pos {
		if p < 0 {
			e.Blocked++
		}
	}
	for _, scc := range topo.TarjanSCC(blockedView{g}) {
		if len(scc) < 2 {
			continue
		}
		ids := make([]int64, len(scc))
		for i, n := range scc {
			ids[i] = n.ID()
		}
		slices.Sort(ids)
		e.Cycles = append(e.Cycles, g.cycleIn(ids))
	}
	slices.SortFunc(e.Cycles, func(a, b Cycle) int { return int(a.Nodes[0].id - b.Nodes[0].id) })
	return e
}

// cycleIn returns a shortest cycle through the smallest node of a strongly connected
// component (breadth-first within the component).
func (g *Graph) cycleIn(scc []int64) Cycle {
	start := int32(scc[0])
	parent := map[int32]int32{}
	queue := []int32{start}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, v := range g.succ.list(u) {
			if _, in := slices.BinarySearch(scc, int64(v)); !in {
				continue
			}
			if v == start {
				var path []int32
				for w := u; w != start; w = parent[w] {
					path = append(path, w)
				}
				path = append(path, start)
				slices.Reverse(path)
				c := Cycle{}
				for i, id := range path {
					next := start
					if i+1 < len(path) {
						next = path[i+1]
					}
					k, _ := g.kinds(int64(id), int64(next))
					c.Nodes = append(c.Nodes, g.node(id))
					c.Kinds = append(c.Kinds, k)
				}
				return c
			}
			if _, seen := parent[v]; !seen {
				parent[v] = u
				queue = append(queue, v)
			}
		}
	}
	// Unreachable: every strongly connected component of two or more nodes has a cycle
	// through each of its nodes. Report the component rather than nothing.
	c := Cycle{}
	for _, id := range scc {
		c.Nodes = append(c.Nodes, g.node(int32(id)))
		c.Kinds = append(c.Kinds, 0)
	}
	return c
}

// blockedView is the graph restricted to blocked nodes, where every cycle lies.
type blockedView struct{ g *Graph }

func (v blockedView) Node(id int64) gonum.Node { return v.g.Node(id) }
func (v blockedView) Nodes() gonum.Nodes {
	var ids []int32
	for i, p := range v.g.pos {
		if p < 0 {
			ids = append(ids, int32(i))
		}
	}
	return &nodeIter{g: v.g, ids: ids, n: len(ids)}
}
func (v blockedView) From(id int64) gonum.Nodes      { return v.g.From(id) }
func (v blockedView) To(id int64) gonum.Nodes        { return v.g.To(id) }
func (v blockedView) HasEdgeBetween(x, y int64) bool { return v.g.HasEdgeBetween(x, y) }
func (v blockedView) HasEdgeFromTo(u, w int64) bool  { return v.g.HasEdgeFromTo(u, w) }
func (v blockedView) Edge(u, w int64) gonum.Edge     { return v.g.Edge(u, w) }
