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
	raw   []rawEdge
	errs  []error

	// What index finds in its pass over the items: each item's namespace as a dense
	// index (0 for cluster-scoped items); the items' positions grouped by namespace,
	// ascending within each, namespace k's at byNS[start[k]:start[k+1]]; and the
	// items that declare dependencies.
	nsIndex   map[string]int32
	ns        []int32
	byNS      []int32
	start     []int32
	dependsOn []int32
}

// New builds the restore DAG of m. The graph is always returned; the error, when not
// nil, joins a *CycleError and any *DependsOnError, and says what the graph leaves out.
func New(m *manifest.Manifest, opts Options) (*Graph, error) {
	items := m.Items()
	g := &Graph{nodes: make([]*Node, len(items)), items: len(items), m: m}
	slab := make([]Node, len(items))
	for i, it := range items {
		slab[i] = Node{id: int64(i), Item: it}
		g.nodes[i] = &slab[i]
	}
	b := &builder{g: g, items: items, raw: make([]rawEdge, 0, 2*len(items))}
	b.index()
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

// ownerEdges resolves every owner reference to an edge from the owner. Kubernetes lets
// an owner be in its dependent's namespace or cluster-scoped, so each namespace's
// items are resolved together, against a map of that namespace's UIDs and one of the
// cluster-scoped items': maps small enough to stay in the cache, where one map of a
// million UIDs misses it on nearly every probe. An owner in neither (in another
// namespace, which the garbage collector does not honour, or not in the backup) is
// looked up in a map of every UID, built the first time one is.
func (b *builder) ownerEdges() {
	items, byNS, start := b.items, b.byNS, b.start
	uidMap := func(positions []int32, m map[types.UID]int32) map[types.UID]int32 {
		for _, i := range positions {
			m[items[i].UID] = i
		}
		return m
	}
	cluster := uidMap(b.clusterScoped(), make(map[types.UID]int32, start[1]))
	var all map[types.UID]int32
	resolve := func(positions []int32, local map[types.UID]int32) {
		for _, i := range positions {
			for _, uid := range items[i].OwnerUIDs {
				o, ok := local[uid]
				if !ok {
					o, ok = cluster[uid]
				}
				if !ok {
					if all == nil {
						all = uidMap(byNS, make(map[types.UID]int32, len(items)))
					}
					o, ok = all[uid]
				}
				if ok {
					b.edge(o, i, EdgeOwner)
				} else {
					b.g.warn(b.g.nodes[i], "owner "+string(uid)+" is not in the backup; restored without it")
				}
			}
		}
	}
	resolve(b.clusterScoped(), nil)
	// One map for every namespace in turn, cleared between them; made again when it
	// has held many more UIDs than the next namespace has, for clear's cost follows
	// the most it has held.
	var local map[types.UID]int32
	held := 0
	for k := 1; k < len(start)-1; k++ {
		positions := byNS[start[k]:start[k+1]]
		if local == nil || held > 4*len(positions)+64 {
			local, held = make(map[types.UID]int32, len(positions)), 0
		} else {
			clear(local)
		}
		held = max(held, len(positions))
		resolve(positions, uidMap(positions, local))
	}
	// Warnings in the items' order, as a single pass over them would give.
	slices.SortStableFunc(b.g.warnings, func(x, y Warning) int { return cmp.Compare(x.Node.id, y.Node.id) })
}

func (b *builder) crdEdges() {
	// Keyed by the group-resource a CRD's name <plural>.<group> splits into, so that
	// looking up an item's CRD builds no string.
	crds := map[schema.GroupResource]int32{}
	for _, i := range b.clusterScoped() {
		if it := b.items[i]; it.GroupResource() == manifest.CRDGroupResource {
			if gr, ok := manifest.DefinedBy(it.Name); ok {
				crds[gr] = i
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

// index makes one pass over the items for what the edges need (builder's fields):
// the edge passes then read only what is theirs, where each pass over a million items
// costs a cache miss an item. Items come sorted by group, version and namespace, so a
// namespace is looked up once per run of items, not once per item.
func (b *builder) index() {
	b.nsIndex = map[string]int32{"": 0}
	b.ns = make([]int32, len(b.items))
	count := []int32{0}
	last, lastIdx := "", int32(0)
	for i, it := range b.items {
		if it.Namespace != last {
			idx, ok := b.nsIndex[it.Namespace]
			if !ok {
				idx = int32(len(count))
				b.nsIndex[it.Namespace] = idx
				count = append(count, 0)
			}
			last, lastIdx = it.Namespace, idx
		}
		b.ns[i] = lastIdx
		count[lastIdx]++
		if len(it.Annotations) > 0 {
			if _, ok := it.Annotations.Lookup(DependsOnAnnotation); ok {
				b.dependsOn = append(b.dependsOn, int32(i))
			}
		}
	}
	// A counting sort by namespace.
	b.start = make([]int32, len(count)+1)
	for k, c := range count {
		b.start[k+1] = b.start[k] + c
	}
	b.byNS = make([]int32, len(b.items))
	next := slices.Clone(b.start[:len(count)])
	for i, k := range b.ns {
		b.byNS[next[k]] = int32(i)
		next[k]++
	}
}

// clusterScoped returns the positions of the cluster-scoped items.
func (b *builder) clusterScoped() []int32 { return b.byNS[b.start[0]:b.start[1]] }

func (b *builder) namespaceEdges() {
	// The Namespace object of each namespace index, if the backup holds it.
	object := make([]int32, len(b.start)-1)
	for k := range object {
		object[k] = -1
	}
	found := false
	for _, i := range b.clusterScoped() {
		if it := b.items[i]; it.Group == "" && it.Resource == "namespaces" {
			if k, ok := b.nsIndex[it.Name]; ok && k != 0 {
				object[k], found = i, true
			}
		}
	}
	if !found {
		return
	}
	for i, k := range b.ns {
		if o := object[k]; k != 0 && o >= 0 {
			b.edge(o, int32(i), EdgeNamespace)
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
	ids, kinds := make([]int32, 0, len(raw)), make([]EdgeKind, 0, len(raw))
	succ := make([]span, n)
	inDeg := make([]int32, n)
	for u := range n {
		seg := bucketed[start[u]:start[u+1]]
		if len(seg) > 1 {
			slices.SortFunc(seg, func(a, b rawEdge) int { return cmp.Compare(a.to, b.to) })
		}
		first := int32(len(ids))
		for k, e := range seg {
			if k > 0 && seg[k-1].to == e.to {
				kinds[len(kinds)-1] |= e.kind
				continue
			}
			ids = append(ids, e.to)
			kinds = append(kinds, e.kind)
			inDeg[e.to]++
		}
		d := int32(len(ids)) - first
		succ[u] = span{off: first, n: d, cap: d}
	}
	g.succ = adjacency{span: succ, ids: ids, kinds: kinds}
	pred := make([]span, n)
	var o int32
	for v := range n {
		pred[v] = span{off: o, cap: inDeg[v]}
		o += inDeg[v]
	}
	predIDs := make([]int32, len(ids))
	for u := range n { // ascending u, so every list of predecessors comes out sorted
		for _, v := range g.succ.list(int32(u)) {
			s := &pred[v]
			predIDs[s.off+s.n] = int32(u)
			s.n++
		}
	}
	g.pred = adjacency{span: pred, ids: predIDs}
	g.edges = len(ids)
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
