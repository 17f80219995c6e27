package graph

import (
	"cmp"
	"errors"
	"slices"

	"github.com/restoregraph/restoregraph/internal/toposort"
	"github.com/restoregraph/restoregraph/manifest"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Options tune New.
type Options struct {
	// Rules add optional ordering edges, each with its own kind, in the order given.
	Rules []Rule
}

// rawEdge is an edge before adjacency is built.
type rawEdge struct {
	from, to int32
	kind     EdgeKind
}

type builder struct {
	g     *Graph
	items []*manifest.Item
	byUID map[types.UID]int32
	raw   []rawEdge
	errs  []error
}

// New builds the restore DAG of m. The graph is always returned; the error, when not
// nil, joins a *CycleError and any *DependsOnError, and says what the graph leaves out.
func New(m *manifest.Manifest, opts Options) (*Graph, error) {
	items := m.Items()
	g := &Graph{nodes: make([]*Node, len(items)), m: m}
	slab := make([]Node, len(items))
	for i, it := range items {
		slab[i] = Node{id: int64(i), Item: it}
		g.nodes[i] = &slab[i]
	}
	b := &builder{g: g, items: items, byUID: make(map[types.UID]int32, len(items)), raw: make([]rawEdge, 0, 2*len(items))}
	for i, it := range items {
		b.byUID[it.UID] = int32(i)
	}
	b.ownerEdges()
	b.crdEdges()
	b.namespaceEdges()
	b.dependsOnEdges()
	g.setEdges(b.raw)
	b.raw = nil
	if err := g.sort(); err != nil {
		b.errs = append(b.errs, err)
	}
	if err := g.applyRules(items, opts.Rules); err != nil {
		b.errs = append(b.errs, err)
	}
	return g, errors.Join(b.errs...)
}

func (b *builder) edge(from, to int32, kind EdgeKind) {
	if from == to {
		b.g.warn(b.g.nodes[to], kind.String()+" edge to itself dropped")
		return
	}
	b.raw = append(b.raw, rawEdge{from, to, kind})
}

func (g *Graph) warn(n *Node, msg string) {
	g.warnings = append(g.warnings, Warning{Node: n, Message: msg})
}

func (b *builder) ownerEdges() {
	for i, it := range b.items {
		for _, uid := range it.OwnerUIDs {
			if o, ok := b.byUID[uid]; ok {
				b.edge(o, int32(i), EdgeOwner)
			} else {
				b.g.warn(b.g.nodes[i], "owner "+string(uid)+" is not in the backup; restored without it")
			}
		}
	}
}

func (b *builder) crdEdges() {
	// Keyed by the group-resource a CRD's name <plural>.<group> splits into, so that
	// looking up an item's CRD builds no string.
	crds := map[schema.GroupResource]int32{}
	for i, it := range b.items {
		if it.GroupResource() == manifest.CRDGroupResource {
			if gr, ok := manifest.DefinedBy(it.Name); ok {
				crds[gr] = int32(i)
			}
		}
	}
	if len(crds) == 0 {
		return
	}
	for i, it := range b.items {
		if it.Group == "" {
			continue
		}
		if c, ok := crds[it.GroupResource()]; ok {
			b.edge(c, int32(i), EdgeCRD)
		}
	}
}

func (b *builder) namespaceEdges() {
	namespaces := map[string]int32{}
	for i, it := range b.items {
		if it.Group == "" && it.Resource == "namespaces" {
			namespaces[it.Name] = int32(i)
		}
	}
	if len(namespaces) == 0 {
		return
	}
	for i, it := range b.items {
		if it.Namespace == "" {
			continue
		}
		if n, ok := namespaces[it.Namespace]; ok {
			b.edge(n, int32(i), EdgeNamespace)
		}
	}
}

// setEdges builds the adjacency lists from raw edges, merging duplicates. Edges are
// bucketed by source with a counting sort (linear in the edge count), and each node's
// few edges sorted by target.
func (g *Graph) setEdges(raw []rawEdge) {
	n := len(g.nodes)
	start := make([]int32, n+1)
	for _, e := range raw {
		start[e.from+1]++
	}
	for u := range n {
		start[u+1] += start[u]
	}
	bucketed := make([]rawEdge, len(raw))
	next := slices.Clone(start[:n])
	for _, e := range raw {
		bucketed[next[e.from]] = e
		next[e.from]++
	}
	outIDs, outKinds := make([]int32, 0, len(raw)), make([]EdgeKind, 0, len(raw))
	g.out, g.outKinds, g.in = make([][]int32, n), make([][]EdgeKind, n), make([][]int32, n)
	inDeg := make([]int32, n)
	for u := range n {
		seg := bucketed[start[u]:start[u+1]]
		if len(seg) > 1 {
			slices.SortFunc(seg, func(a, b rawEdge) int { return cmp.Compare(a.to, b.to) })
		}
		first := len(outIDs)
		for k, e := range seg {
			if k > 0 && seg[k-1].to == e.to {
				outKinds[len(outKinds)-1] |= e.kind
				continue
			}
			outIDs = append(outIDs, e.to)
			outKinds = append(outKinds, e.kind)
			inDeg[e.to]++
		}
		// Full slice expressions: a later AddEdge reallocates this node's list only.
		g.out[u] = outIDs[first:len(outIDs):len(outIDs)]
		g.outKinds[u] = outKinds[first:len(outKinds):len(outKinds)]
	}
	inIDs := make([]int32, len(outIDs))
	var o int32
	for v := range n {
		g.in[v] = inIDs[o : o : o+inDeg[v]]
		o += inDeg[v]
	}
	for u := range n { // ascending u, so every in list comes out sorted
		for _, v := range g.out[u] {
			g.in[v] = append(g.in[v], int32(u))
		}
	}
	g.edges = len(outIDs)
}

// sort computes a topological position for every node (Kahn's algorithm, roots in ID
// order, first in first out) and marks the nodes on or behind a cycle as blocked.
func (g *Graph) sort() error {
	n := len(g.nodes)
	g.at = toposort.Order(g)
	g.pos = make([]int32, n)
	for v := range g.pos {
		g.pos[v] = -1
	}
	for i, u := range g.at {
		g.pos[u] = int32(i)
	}
	if len(g.at) == n {
		g.blocked = make([]bool, n)
		return nil
	}
	g.blocked = toposort.Unordered(n, g.at)
	return g.cycleError()
}
