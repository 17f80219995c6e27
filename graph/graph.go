package graph

import (
	"fmt"
	"slices"

	"github.com/restoregraph/restoregraph/manifest"
	gonum "gonum.org/v1/gonum/graph"
)

// Node is one object of the backup, or a barrier that a rule set inserts between
// groups of objects (Item nil).
type Node struct {
	id   int64
	Item *manifest.Item
	// barrier names a barrier; nil for objects. A pointer, not a string: a million
	// items' nodes are then 24 bytes each, not 32.
	barrier *string
}

// Barrier names a synthetic node that orders groups of objects, such as Velero's
// "after configmaps"; it restores nothing. Empty for objects.
func (n *Node) Barrier() string {
	if n.barrier == nil {
		return ""
	}
	return *n.barrier
}

// ID returns the node's ID: its position in the manifest's canonical order, or after
// every item for barriers.
func (n *Node) ID() int64 { return n.id }

// String names the node as a person reads it.
func (n *Node) String() string {
	if n.Item == nil {
		return "[" + n.Barrier() + "]"
	}
	return n.Item.String()
}

// Graph is the restore DAG of one manifest.
type Graph struct {
	// The items' nodes, item i's at i, in one allocation; then the barriers', each
	// its own, for a pointer to a node stays good as barriers are added.
	nodes    []Node
	barriers []*Node
	// succ lists each node's successors; pred each node's predecessors, with why each
	// is an edge. Both are sorted by node ID.
	succ, pred adjacency

	pos       []int32 // topological position of each node; -1 when blocked (on a cycle or behind one)
	at        []int32 // the node at each position: the topological order
	warnings  []Warning
	edges     int
	ruleNames []string // the name of rule i, whose edges are RuleKind << i
	m         *manifest.Manifest
}

// NodeOf returns the node that stands for it, an item of the manifest the graph was
// built from.
func (g *Graph) NodeOf(it *manifest.Item) (int64, bool) {
	i, ok := g.m.Index(it)
	if !ok || i >= len(g.nodes) || g.nodes[i].Item != it {
		return 0, false
	}
	return int64(i), true
}

var _ gonum.Directed = (*Graph)(nil)

// Len returns the number of nodes, barriers included.
func (g *Graph) Len() int { return len(g.nodes) + len(g.barriers) }

// EdgeCount returns the number of edges (an edge with several reasons counts once).
func (g *Graph) EdgeCount() int { return g.edges }

// NodeAt returns the node with the given ID, or nil.
func (g *Graph) NodeAt(id int64) *Node {
	if id < 0 || id >= int64(g.Len()) {
		return nil
	}
	return g.node(int32(id))
}

// node returns node u, which exists.
func (g *Graph) node(u int32) *Node {
	if int(u) < len(g.nodes) {
		return &g.nodes[u]
	}
	return g.barriers[int(u)-len(g.nodes)]
}

// Warnings returns what building the graph reported without failing.
func (g *Graph) Warnings() []Warning { return g.warnings }

// Node implements gonum's graph.Graph.
func (g *Graph) Node(id int64) gonum.Node {
	if n := g.NodeAt(id); n != nil {
		return n
	}
	return nil
}

// Nodes implements gonum's graph.Graph; nodes come in ID order.
func (g *Graph) Nodes() gonum.Nodes { return &nodeIter{g: g, all: true, n: g.Len()} }

// From implements gonum's graph.Graph: the successors of id.
func (g *Graph) From(id int64) gonum.Nodes {
	if g.NodeAt(id) == nil {
		return &nodeIter{g: g}
	}
	ids := g.succ.list(int32(id))
	return &nodeIter{g: g, ids: ids, n: len(ids)}
}

// To implements gonum's graph.Directed: the predecessors of id.
func (g *Graph) To(id int64) gonum.Nodes {
	if g.NodeAt(id) == nil {
		return &nodeIter{g: g}
	}
	ids := g.pred.list(int32(id))
	return &nodeIter{g: g, ids: ids, n: len(ids)}
}

// HasEdgeFromTo implements gonum's graph.Directed.
func (g *Graph) HasEdgeFromTo(uid, vid int64) bool {
	_, ok := g.kinds(uid, vid)
	return ok
}

// HasEdgeBetween implements gonum's graph.Graph.
func (g *Graph) HasEdgeBetween(xid, yid int64) bool {
	return g.HasEdgeFromTo(xid, yid) || g.HasEdgeFromTo(yid, xid)
}

// Edge implements gonum's graph.Graph; the result is an *Edge, or nil.
func (g *Graph) Edge(uid, vid int64) gonum.Edge {
	if e := g.EdgeFromTo(uid, vid); e != nil {
		return e
	}
	return nil
}

// EdgeFromTo returns the edge from u to v with its reasons, or nil.
func (g *Graph) EdgeFromTo(uid, vid int64) *Edge {
	k, ok := g.kinds(uid, vid)
	if !ok {
		return nil
	}
	return &Edge{F: g.node(int32(uid)), T: g.node(int32(vid)), Kinds: k}
}

func (g *Graph) kinds(uid, vid int64) (EdgeKind, bool) {
	if g.NodeAt(uid) == nil || g.NodeAt(vid) == nil {
		return 0, false
	}
	i, ok := slices.BinarySearch(g.pred.list(int32(vid)), int32(uid))
	if !ok {
		return 0, false
	}
	return g.pred.kindsOf(int32(vid))[i], true
}

// Edge is a dependency and why it exists.
type Edge struct {
	F, T  *Node
	Kinds EdgeKind
}

// From implements gonum's graph.Edge.
func (e *Edge) From() gonum.Node { return e.F }

// To implements gonum's graph.Edge.
func (e *Edge) To() gonum.Node { return e.T }

// ReversedEdge implements gonum's graph.Edge.
func (e *Edge) ReversedEdge() gonum.Edge { return &Edge{F: e.T, T: e.F, Kinds: e.Kinds} }

func (e *Edge) String() string { return fmt.Sprintf("%s -[%s]-> %s", e.F, e.Kinds, e.T) }

// nodeIter iterates over all nodes (all) or over a list of IDs.
type nodeIter struct {
	g   *Graph
	ids []int32
	all bool
	n   int
	cur int // position of the next node, plus one after Next
}

func (it *nodeIter) Next() bool {
	if it.cur >= it.n {
		it.cur = it.n + 1
		return false
	}
	it.cur++
	return true
}

func (it *nodeIter) Node() gonum.Node {
	if it.cur == 0 || it.cur > it.n {
		return nil
	}
	if it.all {
		return it.g.node(int32(it.cur - 1))
	}
	return it.g.node(it.ids[it.cur-1])
}

func (it *nodeIter) Len() int {
	if it.cur > it.n {
		return 0
	}
	return it.n - it.cur
}

func (it *nodeIter) Reset() { it.cur = 0 }
