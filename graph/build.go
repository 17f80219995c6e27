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
	// Detach, when set, names the items whose owner references make no edge: they are
	// restored apart from their owners (a rule may order them before), whose
	// controllers adopt them.
	Detach func(*manifest.Item) bool
}

type builder struct {
	g      *Graph
	items  []*manifest.Item
	errs   []error
	detach func(*manifest.Item) bool

	// What index finds in its pass over the items: each item's namespace as a dense
	// index (0 for cluster-scoped items); the items' positions grouped by namespace,
	// ascending within each, namespace k's at byNS[start[k]:start[k+1]]; the items
	// that declare dependencies; and how many owner references there are in all.
	nsIndex   map[string]int32
	ns        []int32
	byNS      []int32
	start     []int32
	dependsOn []int32
	owners    int
	// indeg[v] is node v's number of predecessors, for the sort: taken as the lists
	// are laid out, so that the sort need not read every list again. It is written
	// over ns, and the sort writes its order over byNS: at a million items, 8 MB not
	// taken fresh from the heap, cleared and faulted in.
	indeg []int32
}

// New builds the restore DAG of m. The graph is always returned; the error, when not
// nil, joins a *CycleError and any *DependsOnError, and says what the graph leaves out.
//
// The edges are found an item at a time, as lists of predecessors laid end to end
// namespace by namespace, and the lists of successors are those turned around: no list
// of every edge is made, bucketed and sorted.
func New(m *manifest.Manifest, opts Options) (*Graph, error) {
	items := m.Items()
	g := &Graph{nodes: make([]Node, len(items)), m: m}
	b := &builder{g: g, items: items, detach: opts.Detach}
	b.index()
	g.successors(b.predecessors())
	b.dependsOnEdges()
	if err := g.sort(b.indeg, b.byNS); err != nil {
		b.errs = append(b.errs, err)
	}
	if err := g.applyRules(items, opts.Rules); err != nil {
		b.errs = append(b.errs, err)
	}
	return g, errors.Join(b.errs...)
}

// edge adds an edge found after the lists are built (a depends-on annotation's), or
// gives an existing one kind too. The graph is not sorted yet: no order to keep.
func (b *builder) edge(from, to int32, kind EdgeKind) {
	if g := b.g; !g.selfEdge(from, to, kind) && !g.mergeKind(from, to, kind) {
		g.link(from, to, kind)
		b.indeg[to]++
	}
}

// selfEdge reports whether from → to is an edge from a node to itself, and warns that
// it is dropped.
func (g *Graph) selfEdge(from, to int32, kind EdgeKind) bool {
	if from != to {
		return false
	}
	g.warn(g.node(to), kind.String()+" edge to itself dropped")
	return true
}

func (g *Graph) warn(n *Node, msg string) {
	g.warnings = append(g.warnings, Warning{Node: n, Message: msg})
}

// index makes one pass over the items for their nodes and for what the edges need
// (builder's fields): the later passes then read only what is theirs, where each pass
// over a million items costs a cache miss an item. Items come sorted by group, version
// and namespace, so a namespace is looked up once per run of items, not once per item.
func (b *builder) index() {
	n := len(b.items)
	b.nsIndex = map[string]int32{"": 0}
	b.ns = make([]int32, n)
	count := []int32{0}
	last, lastIdx := "", int32(0)
	for i, it := range b.items {
		b.g.nodes[i] = Node{id: int64(i), Item: it}
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
		b.owners += len(it.OwnerUIDs)
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
	b.byNS = make([]int32, n)
	next := slices.Clone(b.start[:len(count)])
	for i, k := range b.ns {
		b.byNS[next[k]] = int32(i)
		next[k]++
	}
}

// clusterScoped returns the positions of the cluster-scoped items.
func (b *builder) clusterScoped() []int32 { return b.byNS[b.start[0]:b.start[1]] }

// crds returns the position of each CustomResourceDefinition in the backup, by the
// group-resource its name <plural>.<group> splits into (so that looking up an item's
// CRD builds no string), or nil when there is none.
func (b *builder) crds() map[schema.GroupResource]int32 {
	var crds map[schema.GroupResource]int32
	for _, i := range b.clusterScoped() {
		if it := b.items[i]; it.GroupResource() == manifest.CRDGroupResource {
			if gr, ok := manifest.DefinedBy(it.Name); ok {
				if crds == nil {
					crds = map[schema.GroupResource]int32{}
				}
				crds[gr] = i
			}
		}
	}
	return crds
}

// namespaceObjects returns the Namespace object of each namespace index, -1 where the
// backup does not hold it, or nil when it holds none.
func (b *builder) namespaceObjects() []int32 {
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
		return nil
	}
	return object
}

// predecessors lays out every item's list of predecessors in g.pred, with each edge's
// kinds: its owners, its CRD, its namespace, sorted and merged where one object is a
// predecessor twice. It returns each node's span of successors holding only their
// number, for successors to lay out.
//
// The lists are laid out namespace by namespace, each item's while its owners are
// found: the pass that reads an item's owner references is the one that writes its
// list. Kubernetes lets an owner be in its dependent's namespace or cluster-scoped, so
// each namespace's owners are found in a map of that namespace's UIDs and one of the
// cluster-scoped items': maps small enough to stay in the cache, where one map of a
// million UIDs misses it on nearly every probe. An owner in neither (in another
// namespace, which the garbage collector does not honour, or not in the backup) is
// looked up in a map of every UID, built the first time one is.
//
// An edge's kinds are kept on its target's side only: turning the lists around then
// writes one array of ids in scattered places, not two.
func (b *builder) predecessors() (succ []span) {
	g, items, n := b.g, b.items, len(b.items)
	byNS, start := b.byNS, b.start
	crds, object := b.crds(), b.namespaceObjects()
	spans := make([]span, n)
	ids := make([]int32, 0, b.owners+n)
	kinds := make([]EdgeKind, 0, cap(ids))
	succ = make([]span, n)
	// Each item's count of predecessors takes the place of its namespace's index, read
	// for the last time by index.
	b.indeg = b.ns
	uidMap := func(positions []int32, m map[types.UID]int32) map[types.UID]int32 {
		for _, i := range positions {
			m[items[i].UID] = i
		}
		return m
	}
	cluster := uidMap(b.clusterScoped(), make(map[types.UID]int32, start[1]))
	var all map[types.UID]int32
	type pred struct {
		from int32
		kind EdgeKind
	}
	var preds []pred
	// An item has two or three predecessors: kept sorted as they come. One with more
	// than sortedAsTheyCome (an object with thousands of owner references, which the
	// manifest format allows) has them sorted once they are all in, not each moved
	// past those before it: 100,000 took 6.2 s so (BenchmarkOwnersOfOneObject).
	const sortedAsTheyCome = 8
	add := func(from, to int32, kind EdgeKind) {
		if !g.selfEdge(from, to, kind) {
			preds = append(preds, pred{from, kind})
			if len(preds) > sortedAsTheyCome {
				return
			}
			for k := len(preds) - 1; k > 0 && preds[k-1].from > preds[k].from; k-- {
				preds[k-1], preds[k] = preds[k], preds[k-1]
			}
		}
	}
	// The cluster-scoped items (k = 0) have no namespace's map. For the rest, one map
	// for every namespace in turn, cleared between them; made again when it has held
	// many more UIDs than the next namespace has, for clear's cost follows the most it
	// has held.
	var local map[types.UID]int32
	held := 0
	for k := range int32(len(start) - 1) {
		positions := byNS[start[k]:start[k+1]]
		if k > 0 {
			if local == nil || held > 4*len(positions)+64 {
				local, held = make(map[types.UID]int32, len(positions)), 0
			} else {
				clear(local)
			}
			held = max(held, len(positions))
			uidMap(positions, local)
		}
		for _, i := range positions {
			preds = preds[:0]
			it := items[i]
			owners := it.OwnerUIDs
			if b.detach != nil && len(owners) > 0 && b.detach(it) {
				owners = nil
			}
			for _, uid := range owners {
				o, ok := local[uid]
				if !ok {
					o, ok = cluster[uid]
				}
				if !ok {
					if all == nil {
						all = uidMap(byNS, make(map[types.UID]int32, n))
					}
					o, ok = all[uid]
				}
				if ok {
					add(o, i, EdgeOwner)
				} else {
					g.warn(g.node(i), "owner "+string(uid)+" is not in the backup; restored without it")
				}
			}
			if crds != nil && it.Group != "" {
				if c, ok := crds[it.GroupResource()]; ok {
					add(c, i, EdgeCRD)
				}
			}
			if object != nil {
				if o := object[k]; o >= 0 {
					add(o, i, EdgeNamespace)
				}
			}
			if len(preds) > sortedAsTheyCome {
				slices.SortFunc(preds, func(x, y pred) int { return cmp.Compare(x.from, y.from) })
			}
			first := int32(len(ids))
			for j, p := range preds {
				if j > 0 && preds[j-1].from == p.from {
					kinds[len(kinds)-1] |= p.kind
					continue
				}
				ids = append(ids, p.from)
				kinds = append(kinds, p.kind)
				succ[p.from].n++
			}
			d := int32(len(ids)) - first
			spans[i] = span{off: first, n: d}
			b.indeg[i] = d
		}
	}
	// The warnings came namespace by namespace; they are told in the items' order.
	slices.SortStableFunc(g.warnings, func(x, y Warning) int { return cmp.Compare(x.Node.id, y.Node.id) })
	g.pred = adjacency{span: spans, ids: ids, kinds: kinds}
	return succ
}

// successors turns the lists of predecessors around, into succ, whose spans hold each
// node's number of successors. Filled in ascending order of the items, every list comes
// out sorted.
func (g *Graph) successors(succ []span) {
	n := len(succ)
	var o int32
	for u := range succ {
		d := succ[u].n
		succ[u] = span{off: o}
		o += d
	}
	ids := make([]int32, o)
	for v := range int32(n) {
		for _, u := range g.pred.list(v) {
			t := &succ[u]
			ids[t.off+t.n] = v
			t.n++
		}
	}
	g.succ = adjacency{span: succ, ids: ids}
	g.edges = int(o)
}

// sort computes a topological position for every node (Kahn's algorithm, roots in ID
// order, first in first out); a node on or behind a cycle gets none (-1) and is
// blocked. indeg holds each node's number of predecessors; it becomes the positions.
// The order is written over buf, an array of a node each that the build has done with.
func (g *Graph) sort(indeg, buf []int32) error {
	g.at, g.pos = toposort.OrderFrom(g, indeg, buf), indeg
	if len(g.at) == g.Len() {
		return nil
	}
	return g.cycleError()
}
