package graph

import (
	"errors"
	"fmt"
	"slices"
)

var (
	// ErrWouldCycle: the edge asked for would close a cycle.
	ErrWouldCycle = errors.New("edge would close a dependency cycle")
	// ErrBlockedNode: the edge touches a node that is on or behind a cycle.
	ErrBlockedNode = errors.New("node is blocked by a dependency cycle")
)

// WouldCycle reports whether an edge from → to would close a cycle, that is whether to
// already reaches from. Both must be valid, unblocked node IDs.
func (g *Graph) WouldCycle(from, to int64) bool {
	if from == to {
		return true
	}
	if g.pos[from] < g.pos[to] {
		return false // every edge goes forward in pos, so to cannot reach from
	}
	_, found := g.reach(int32(to), int32(from), g.pos[from])
	return found
}

// AddEdge adds the edge from → to for kind, keeping the topological order valid
// (Pearce and Kelly's dynamic topological sort: only the nodes between the two
// positions move). It returns an error wrapping ErrWouldCycle, and adds nothing, when
// the edge would close a cycle. An existing edge gains kind.
func (g *Graph) AddEdge(from, to int64, kind EdgeKind) error {
	u, v := g.NodeAt(from), g.NodeAt(to)
	switch {
	case u == nil || v == nil:
		return fmt.Errorf("graph: AddEdge(%d, %d): no such node", from, to)
	case g.pos[from] < 0 || g.pos[to] < 0:
		return fmt.Errorf("graph: %s -> %s: %w", u, v, ErrBlockedNode)
	case from == to:
		return fmt.Errorf("graph: %s depends on itself: %w", u, ErrWouldCycle)
	}
	if g.mergeKind(int32(from), int32(to), kind) {
		return nil
	}
	if pu, pv := g.pos[from], g.pos[to]; pu > pv {
		fwd, found := g.reach(int32(to), int32(from), pu)
		if found {
			return fmt.Errorf("graph: %s -> %s: %s already depends on %s: %w", u, v, u, v, ErrWouldCycle)
		}
		g.reorder(g.reachBack(int32(from), pv), fwd)
	}
	g.link(int32(from), int32(to), kind)
	return nil
}

// reach walks forward from start over unblocked nodes at positions up to limit, and
// reports whether it met target; it returns the nodes visited. (Blocked nodes hold
// position -1 and never reach an unblocked one.)
func (g *Graph) reach(start, target int32, limit int32) ([]int32, bool) {
	seen := map[int32]bool{start: true}
	stack, visited := []int32{start}, []int32{start}
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, w := range g.succ.list(u) {
			if w == target {
				return nil, true
			}
			if !seen[w] && g.pos[w] >= 0 && g.pos[w] <= limit {
				seen[w] = true
				stack = append(stack, w)
				visited = append(visited, w)
			}
		}
	}
	return visited, false
}

// reachBack walks backward from start over nodes at positions from limit up.
func (g *Graph) reachBack(start, limit int32) []int32 {
	seen := map[int32]bool{start: true}
	stack, visited := []int32{start}, []int32{start}
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, w := range g.pred.list(u) {
			if !seen[w] && g.pos[w] >= limit {
				seen[w] = true
				stack = append(stack, w)
				visited = append(visited, w)
			}
		}
	}
	return visited
}

// reorder gives the nodes of back (which reach the new edge's source) and fwd (which
// the target reaches) the positions they held together, back first, each keeping its
// relative order.
func (g *Graph) reorder(back, fwd []int32) {
	byPos := func(a, b int32) int { return int(g.pos[a] - g.pos[b]) }
	slices.SortFunc(back, byPos)
	slices.SortFunc(fwd, byPos)
	positions := make([]int32, 0, len(back)+len(fwd))
	for _, n := range back {
		positions = append(positions, g.pos[n])
	}
	for _, n := range fwd {
		positions = append(positions, g.pos[n])
	}
	slices.Sort(positions)
	for i, n := range append(back, fwd...) {
		g.pos[n] = positions[i]
		g.at[positions[i]] = n
	}
}

// mergeKind gives the edge from → to kind too, and reports whether the edge exists.
func (g *Graph) mergeKind(from, to int32, kind EdgeKind) bool {
	i, ok := slices.BinarySearch(g.pred.list(to), from)
	if ok {
		g.pred.kindsOf(to)[i] |= kind
	}
	return ok
}

func (g *Graph) link(from, to int32, kind EdgeKind) {
	i, _ := slices.BinarySearch(g.succ.list(from), to)
	g.succ.insert(from, i, to, 0)
	j, _ := slices.BinarySearch(g.pred.list(to), from)
	g.pred.insert(to, j, from, kind)
	g.edges++
}

// addNode appends a barrier node with no edges, last in the order.
func (g *Graph) addNode(barrier string) int32 {
	id := int32(g.Len())
	g.barriers = append(g.barriers, &Node{id: int64(id), barrier: &barrier})
	g.succ.addNode()
	g.pred.addNode()
	g.pos = append(g.pos, int32(len(g.at)))
	g.at = append(g.at, id)
	return id
}
