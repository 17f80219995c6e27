package graph

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/graph/topo"
	"k8s.io/apimachinery/pkg/types"

	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/scheduler"
)

type fixture struct {
	m *manifest.Manifest
}

func newFixture() *fixture { return &fixture{m: manifest.New(0)} }

func (f *fixture) add(group, kind, resource, ns, name string, opts ...func(*manifest.Item)) *manifest.Item {
	it := &manifest.Item{Type: &manifest.Type{Group: group, Version: "v1", Kind: kind, Resource: resource}, Namespace: ns, Name: name,
		UID: types.UID(strings.ToLower(kind) + "/" + ns + "/" + name)}
	for _, o := range opts {
		o(it)
	}
	if _, err := f.m.Add(it); err != nil {
		panic(err)
	}
	return it
}

func ownedBy(owners ...*manifest.Item) func(*manifest.Item) {
	return func(it *manifest.Item) {
		for _, o := range owners {
			it.OwnerUIDs = append(it.OwnerUIDs, o.UID)
		}
	}
}

func ownerUID(uid string) func(*manifest.Item) {
	return func(it *manifest.Item) { it.OwnerUIDs = append(it.OwnerUIDs, types.UID(uid)) }
}

func annotated(k, v string) func(*manifest.Item) {
	return func(it *manifest.Item) { it.Annotations = append(it.Annotations, manifest.Pair{Key: k, Value: v}) }
}

func labelled(k, v string) func(*manifest.Item) {
	return func(it *manifest.Item) { it.Labels = append(it.Labels, manifest.Pair{Key: k, Value: v}) }
}

// node finds the graph node of an item.
func node(t *testing.T, g *Graph, it *manifest.Item) *Node {
	t.Helper()
	for n := range g.nodes {
		if g.nodes[n].Item == it {
			return &g.nodes[n]
		}
	}
	t.Fatalf("no node for %s", it)
	return nil
}

func kindsOf(t *testing.T, g *Graph, from, to *manifest.Item) EdgeKind {
	t.Helper()
	e := g.EdgeFromTo(node(t, g, from).ID(), node(t, g, to).ID())
	if e == nil {
		return 0
	}
	return e.Kinds
}

func assertTopological(t *testing.T, g *Graph) {
	t.Helper()
	seen := map[int64]bool{}
	for _, n := range g.Order() {
		for _, p := range g.Predecessors(n.ID()) {
			if !seen[int64(p)] {
				t.Fatalf("%s comes before its predecessor %s", n, g.node(p))
			}
		}
		seen[n.ID()] = true
	}
}

func TestEdgesAndReasons(t *testing.T) {
	f := newFixture()
	crd := f.add("apiextensions.k8s.io", "CustomResourceDefinition", "customresourcedefinitions", "", "widgets.example.io")
	ns := f.add("", "Namespace", "namespaces", "", "shop")
	dep := f.add("apps", "Deployment", "deployments", "shop", "web", annotated(DependsOnAnnotation, "/Namespace/shop, /namespaces/shop/ConfigMap/settings"))
	rs := f.add("apps", "ReplicaSet", "replicasets", "shop", "web-1", ownedBy(dep))
	cm := f.add("", "ConfigMap", "configmaps", "shop", "settings")
	w := f.add("example.io", "Widget", "widgets", "shop", "w1", ownedBy(dep))
	other := f.add("", "ConfigMap", "configmaps", "elsewhere", "x")

	g, err := New(f.m, Options{})
	require.NoError(t, err)
	assert.Equal(t, EdgeNamespace|EdgeDependsOn, kindsOf(t, g, ns, dep), "two reasons, one edge")
	assert.Equal(t, EdgeDependsOn, kindsOf(t, g, cm, dep))
	assert.Equal(t, EdgeOwner, kindsOf(t, g, dep, rs))
	assert.Equal(t, EdgeNamespace, kindsOf(t, g, ns, rs))
	assert.Equal(t, EdgeCRD, kindsOf(t, g, crd, w))
	assert.Equal(t, EdgeOwner, kindsOf(t, g, dep, w))
	assert.Zero(t, kindsOf(t, g, ns, other), "a namespace not in the backup gives no edge")
	assert.Equal(t, 8, g.EdgeCount())
	assert.Equal(t, "owner+namespace", (EdgeOwner | EdgeNamespace).String())
	assertTopological(t, g)
	assert.Empty(t, g.Warnings())

	levels := g.Levels()
	assert.Equal(t, 0, levels[node(t, g, ns).ID()])
	assert.Equal(t, 2, levels[node(t, g, dep).ID()], "after the namespace and the configmap in it")
	assert.Equal(t, 3, levels[node(t, g, rs).ID()])
}

func TestBadShapes(t *testing.T) {
	f := newFixture()
	orphan := f.add("apps", "ReplicaSet", "replicasets", "a", "orphan", ownerUID("gone"))
	self := f.add("", "ConfigMap", "configmaps", "a", "self", ownerUID("configmap/a/self"))
	badAnn := f.add("", "ConfigMap", "configmaps", "a", "bad", annotated(DependsOnAnnotation, "apps/Deployment"))
	missing := f.add("", "ConfigMap", "configmaps", "a", "missing", annotated(DependsOnAnnotation, "apps/namespaces/a/Deployment/nope"))

	g, err := New(f.m, Options{})
	var de *DependsOnError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, badAnn.String(), de.Object)
	assert.Contains(t, de.Error(), "apps/Deployment")

	warnings := map[string]string{}
	for _, w := range g.Warnings() {
		warnings[w.Node.Item.Name] = w.Message
	}
	assert.Contains(t, warnings[orphan.Name], "owner gone is not in the backup")
	assert.Contains(t, warnings[self.Name], "to itself")
	assert.Contains(t, warnings[missing.Name], "apps/namespaces/a/Deployment/nope")
	assert.Len(t, g.Order(), 4, "every object is still ordered")
	assert.Zero(t, g.EdgeCount())
}

func TestParseDependsOn(t *testing.T) {
	refs, err := ParseDependsOn("apps/namespaces/shop/Deployment/web, /Namespace/shop,/namespaces/shop/ConfigMap/c")
	require.NoError(t, err)
	assert.Equal(t, []ObjectRef{
		{Group: "apps", Namespace: "shop", Kind: "Deployment", Name: "web"},
		{Kind: "Namespace", Name: "shop"},
		{Namespace: "shop", Kind: "ConfigMap", Name: "c"},
	}, refs)
	assert.Equal(t, "/namespaces/shop/ConfigMap/c", refs[2].String())
	for _, bad := range []string{"", "a,,b", "apps/Deployment", "apps/ns/shop/Deployment/web", "apps/namespaces//Deployment/web", "apps//web", "a/b/c/d/e/f"} {
		_, err := ParseDependsOn(bad)
		assert.Error(t, err, bad)
	}
}

func TestCycles(t *testing.T) {
	f := newFixture()
	a := f.add("", "ConfigMap", "configmaps", "n", "a", ownerUID("configmap/n/b"))
	b := f.add("", "ConfigMap", "configmaps", "n", "b", annotated(DependsOnAnnotation, "/namespaces/n/ConfigMap/a"))
	behind := f.add("", "Secret", "secrets", "n", "behind", ownedBy(b))
	free := f.add("", "Secret", "secrets", "n", "free")
	after := f.add("", "Secret", "secrets", "n", "after", ownedBy(free))

	g, err := New(f.m, Options{})
	var ce *CycleError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Cycles, 1)
	assert.Equal(t, 3, ce.Blocked)
	c := ce.Cycles[0]
	assert.Equal(t, []*Node{node(t, g, a), node(t, g, b)}, c.Nodes)
	assert.Equal(t, []EdgeKind{EdgeDependsOn, EdgeOwner}, c.Kinds)
	assert.Contains(t, err.Error(), "ConfigMap n/a -[depends-on]-> ConfigMap n/b -[owner]-> ConfigMap n/a")

	assert.Equal(t, []*Node{node(t, g, free), node(t, g, after)}, g.Order(), "what is neither on nor behind a cycle is still offered")
	assert.Equal(t, []*Node{node(t, g, a), node(t, g, b), node(t, g, behind)}, g.Blocked())
	assert.True(t, g.IsBlocked(node(t, g, behind).ID()))
	assert.ErrorIs(t, g.AddEdge(node(t, g, free).ID(), node(t, g, a).ID(), EdgeAdditionalItem), ErrBlockedNode)
}

func TestCycleMessageIsCapped(t *testing.T) {
	f := newFixture()
	for i := range 200 {
		f.add("", "ConfigMap", "configmaps", "n", fmt.Sprintf("a%03d", i), ownerUID(fmt.Sprintf("configmap/n/b%03d", i)))
		f.add("", "ConfigMap", "configmaps", "n", fmt.Sprintf("b%03d", i), ownerUID(fmt.Sprintf("configmap/n/a%03d", i)))
	}
	_, err := New(f.m, Options{})
	var ce *CycleError
	require.ErrorAs(t, err, &ce)
	assert.Len(t, ce.Cycles, 200)
	assert.LessOrEqual(t, len(err.Error()), maxCycleMessage+100)
	assert.Contains(t, err.Error(), "more")
}

func TestClusterAPIRules(t *testing.T) {
	f := newFixture()
	cl := f.add("cluster.x-k8s.io", "Cluster", "clusters", "fleet", "c1")
	md := f.add("cluster.x-k8s.io", "MachineDeployment", "machinedeployments", "fleet", "md", labelled(capiClusterNameKey, "c1"))
	binding := f.add("addons.cluster.x-k8s.io", "ClusterResourceSetBinding", "clusterresourcesetbindings", "fleet", "c1")
	otherNS := f.add("cluster.x-k8s.io", "MachineDeployment", "machinedeployments", "other", "md", labelled(capiClusterNameKey, "c1"))
	// The Cluster is owned by an object labelled with its name: the rule edge would close a cycle.
	loop := f.add("", "Secret", "secrets", "fleet", "loop", labelled(capiClusterNameKey, "c1"))
	cl.OwnerUIDs = []types.UID{loop.UID}

	g, err := New(f.m, Options{})
	require.NoError(t, err)
	assert.Zero(t, kindsOf(t, g, cl, md), "rules are off by default")

	g, err = New(f.m, Options{Rules: []Rule{ClusterAPI}})
	require.NoError(t, err)
	assert.Equal(t, RuleKind, kindsOf(t, g, cl, md))
	assert.Equal(t, "cluster-api", g.KindString(kindsOf(t, g, cl, binding)))
	assert.Zero(t, kindsOf(t, g, cl, otherNS), "a Cluster of another namespace")
	assert.Zero(t, kindsOf(t, g, cl, loop))
	assert.Equal(t, EdgeOwner, kindsOf(t, g, loop, cl))
	require.Len(t, g.Warnings(), 1)
	assert.Contains(t, g.Warnings()[0].String(), "left out: it would close a cycle")
	assertTopological(t, g)
}

// typeOrder is a rule that orders whole resource types through barriers, as Velero's
// order does: every object of one type, a barrier, every object of the next.
type typeOrder []string

func (typeOrder) Name() string { return "type-order" }
func (o typeOrder) AddEdges(b *RuleBuilder) {
	var prev []int
	for _, resource := range o {
		var cur []int
		for i, it := range b.Items() {
			if it.Resource == resource {
				cur = append(cur, i)
			}
		}
		if prev != nil {
			barrier := b.Barrier("after " + resource)
			for _, p := range prev {
				b.Edge(p, barrier)
			}
			for _, c := range cur {
				b.Edge(barrier, c)
			}
		}
		prev = cur
	}
}

func TestRulesWithBarriersAndTheirOwnKinds(t *testing.T) {
	f := newFixture()
	dep := f.add("apps", "Deployment", "deployments", "n", "web")
	rs := f.add("apps", "ReplicaSet", "replicasets", "n", "web-1", ownedBy(dep))
	cm := f.add("", "ConfigMap", "configmaps", "n", "c")
	sec := f.add("", "Secret", "secrets", "n", "s")

	g, err := New(f.m, Options{Rules: []Rule{ClusterAPI, typeOrder{"secrets", "configmaps", "replicasets", "deployments"}}})
	require.NoError(t, err)
	assertTopological(t, g)
	pos := map[*manifest.Item]int{}
	for i, n := range g.Order() {
		if n.Item != nil {
			pos[n.Item] = i
		}
	}
	assert.Less(t, pos[sec], pos[cm])
	assert.Less(t, pos[dep], pos[rs], "the owner edge wins over the rule's replicasets-first order")
	require.NotEmpty(t, g.Warnings(), "the left-out rule edge is reported")
	assert.Contains(t, g.Warnings()[0].String(), "type-order rule edge")
	assert.Equal(t, 7, g.Len(), "four objects and three barriers")
	var barrierIn EdgeKind
	for _, n := range g.Order() {
		if n.Item == nil {
			for _, p := range g.Predecessors(n.ID()) {
				barrierIn |= g.EdgeFromTo(int64(p), n.ID()).Kinds
			}
		}
	}
	assert.Equal(t, RuleKind<<1, barrierIn, "the second rule's edges carry the second rule bit")
	var names, shown []string
	for _, n := range g.Order() {
		if n.Item == nil {
			names, shown = append(names, n.Barrier()), append(shown, n.String())
		} else {
			assert.Empty(t, n.Barrier(), "%s is an object", n)
		}
	}
	assert.Equal(t, []string{"after configmaps", "after replicasets", "after deployments"}, names, "each barrier keeps the name its rule gave it")
	assert.Equal(t, []string{"[after configmaps]", "[after replicasets]", "[after deployments]"}, shown)
	unit := g.LongestRemaining(func(n *Node) float64 {
		if n.Item == nil {
			return 0
		}
		return 1
	})
	assert.Equal(t, unit, g.LongestRemaining(nil), "no weights: objects weigh 1, barriers 0")
	assert.Equal(t, "owner+type-order", g.KindString(EdgeOwner|RuleKind<<1))
	assert.Equal(t, "owner+rule1", (EdgeOwner | RuleKind<<1).String(), "without the graph, rules are numbered")

	many := make([]Rule, maxRules+1)
	for i := range many {
		many[i] = typeOrder{}
	}
	_, err = New(f.m, Options{Rules: many})
	assert.ErrorContains(t, err, "at most 24")
}

func TestGonumConformance(t *testing.T) {
	f := newFixture()
	ns := f.add("", "Namespace", "namespaces", "", "n")
	a := f.add("", "ConfigMap", "configmaps", "n", "a")
	f.add("", "Secret", "secrets", "n", "s", ownedBy(a))
	g, err := New(f.m, Options{})
	require.NoError(t, err)

	sorted, err := topo.Sort(g)
	require.NoError(t, err)
	assert.Len(t, sorted, 3)
	assert.True(t, topo.PathExistsIn(g, node(t, g, ns), g.Node(2)))
	assert.Nil(t, g.Node(99))
	assert.Nil(t, g.Edge(2, 0))
	assert.Equal(t, 3, g.Nodes().Len())
	for nodes := g.Nodes(); nodes.Next(); {
		u := nodes.Node()
		for from := g.From(u.ID()); from.Next(); {
			v := from.Node()
			assert.True(t, g.HasEdgeFromTo(u.ID(), v.ID()))
			assert.True(t, g.HasEdgeBetween(v.ID(), u.ID()))
			e := g.Edge(u.ID(), v.ID())
			assert.Equal(t, u, e.From())
			assert.Equal(t, v, e.ReversedEdge().From())
			found := false
			for to := g.To(v.ID()); to.Next(); {
				found = found || to.Node().ID() == u.ID()
			}
			assert.True(t, found, "To mirrors From")
		}
	}
	it := g.From(0)
	assert.Equal(t, 2, it.Len())
	it.Next()
	assert.Equal(t, 1, it.Len())
	it.Reset()
	assert.Equal(t, 2, it.Len())
}

func TestDOT(t *testing.T) {
	f := newFixture()
	ns := f.add("", "Namespace", "namespaces", "", "shop")
	f.add("apps", "Deployment", "deployments", "shop", "web")
	_ = ns
	g, _ := New(f.m, Options{Rules: []Rule{typeOrder{"namespaces", "deployments"}}})
	out, err := g.DOT("restore")
	require.NoError(t, err)
	s := string(out)
	assert.Contains(t, s, `digraph restore {`)
	assert.Contains(t, s, `label="Deployment\nshop/web\napps/v1"`)
	assert.Contains(t, s, `style=dashed`, "namespace edges are dashed")
	assert.Contains(t, s, `shape=diamond`, "barriers")
	assert.Contains(t, s, `tooltip="type-order"`, "rule edges are named by their rule")
}

func TestDescendantsAndCriticalPath(t *testing.T) {
	f := newFixture()
	root := f.add("", "Namespace", "namespaces", "", "n")
	a := f.add("", "ConfigMap", "configmaps", "n", "a")
	b := f.add("", "Secret", "secrets", "n", "b", ownedBy(a))
	slow := f.add("", "Secret", "secrets", "n", "slow")
	g, err := New(f.m, Options{})
	require.NoError(t, err)

	var names []string
	for _, id := range g.Descendants(node(t, g, a).ID()) {
		names = append(names, g.NodeAt(id).Item.Name)
	}
	assert.Equal(t, []string{"b"}, names)
	assert.Len(t, g.Descendants(node(t, g, root).ID()), 3)

	path, total := g.CriticalPath(nil)
	assert.Equal(t, 3.0, total)
	assert.Equal(t, []*Node{node(t, g, root), node(t, g, a), node(t, g, b)}, path)

	weights := map[*manifest.Item]float64{root: 1, a: 1, b: 1, slow: 10}
	path, total = g.CriticalPath(func(n *Node) float64 { return weights[n.Item] })
	assert.Equal(t, 11.0, total)
	assert.Equal(t, []*Node{node(t, g, root), node(t, g, slow)}, path)
}

func TestAddEdge(t *testing.T) {
	f := newFixture()
	a := f.add("", "ConfigMap", "configmaps", "n", "a")
	b := f.add("", "ConfigMap", "configmaps", "n", "b", ownedBy(a))
	c := f.add("", "ConfigMap", "configmaps", "n", "c", ownedBy(b))
	d := f.add("", "ConfigMap", "configmaps", "n", "d")
	g, err := New(f.m, Options{})
	require.NoError(t, err)
	id := func(it *manifest.Item) int64 { return node(t, g, it).ID() }

	assert.True(t, g.WouldCycle(id(c), id(a)))
	err = g.AddEdge(id(c), id(a), EdgeAdditionalItem)
	assert.True(t, errors.Is(err, ErrWouldCycle), err)
	assert.False(t, g.HasEdgeFromTo(id(c), id(a)), "nothing added")

	// d comes last in the order; an edge d -> a moves d before a.
	assert.False(t, g.WouldCycle(id(d), id(a)))
	require.NoError(t, g.AddEdge(id(d), id(a), EdgeAdditionalItem))
	assertTopological(t, g)
	assert.Equal(t, EdgeAdditionalItem, g.EdgeFromTo(id(d), id(a)).Kinds)
	require.NoError(t, g.AddEdge(id(d), id(a), EdgeDependsOn))
	assert.Equal(t, EdgeAdditionalItem|EdgeDependsOn, g.EdgeFromTo(id(d), id(a)).Kinds)
	assert.ErrorIs(t, g.AddEdge(id(a), id(a), EdgeAdditionalItem), ErrWouldCycle)
	assert.True(t, g.WouldCycle(id(c), id(d)))
}

var _ scheduler.DAG = (*Graph)(nil)

func FuzzParseDependsOn(f *testing.F) {
	f.Add("apps/namespaces/shop/Deployment/web,/Namespace/shop")
	f.Add("/namespaces/a/ConfigMap/b")
	f.Add(",,/")
	f.Fuzz(func(t *testing.T, value string) {
		refs, err := ParseDependsOn(value)
		if err != nil {
			return
		}
		// What parses renders back to references that parse to the same thing.
		parts := make([]string, len(refs))
		for i, r := range refs {
			if r.Kind == "" || r.Name == "" {
				t.Fatalf("accepted a reference without kind or name: %q", value)
			}
			parts[i] = r.String()
		}
		again, err := ParseDependsOn(strings.Join(parts, ","))
		if err != nil || len(again) != len(refs) {
			t.Fatalf("round trip of %q: %v %v", value, again, err)
		}
		for i := range refs {
			if again[i] != refs[i] {
				t.Fatalf("round trip of %q changed %v to %v", value, refs[i], again[i])
			}
		}
	})
}

// Every item of the manifest has its node, and nothing else does.
func TestNodeOf(t *testing.T) {
	m := appManifest(50)
	g, err := New(m, Options{Rules: []Rule{ClusterAPI}})
	require.NoError(t, err)
	for _, it := range m.Items() {
		id, ok := g.NodeOf(it)
		require.True(t, ok, "%s", it)
		assert.Same(t, it, g.NodeAt(id).Item)
	}
	copied := *m.Items()[0]
	_, ok := g.NodeOf(&copied)
	assert.False(t, ok, "an equal item that is not the manifest's has no node")
}

// TestOwnersInEveryScope holds the owner edges to those of one map of every UID, over
// random backups whose owners are in the dependent's namespace, cluster-scoped, in
// another namespace (which Kubernetes does not honour, but a backup may hold) or not in
// the backup, with namespaces of very different sizes; and the warnings to the items'
// order.
func TestOwnersInEveryScope(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 11))
		m := manifest.New(0)
		var uids []types.UID
		var items []*manifest.Item
		for i := range 300 {
			ns := ""
			if r := rng.IntN(10); r > 0 {
				ns = fmt.Sprintf("ns-%d", min(r, 1+rng.IntN(1+i%4)*rng.IntN(9))) // ns-1 the largest
			}
			group := []string{"", "apps", "example.io"}[rng.IntN(3)] // the items' order interleaves namespaces
			it := &manifest.Item{Type: &manifest.Type{Group: group, Version: "v1", Kind: "Thing", Resource: "things"}, Namespace: ns, Name: fmt.Sprintf("t%03d", i),
				UID: types.UID(fmt.Sprintf("uid-%03d", i))}
			for range rng.IntN(3) {
				switch {
				case len(uids) > 0 && rng.IntN(8) > 0:
					it.OwnerUIDs = append(it.OwnerUIDs, uids[rng.IntN(len(uids))])
				case rng.IntN(2) == 0:
					it.OwnerUIDs = append(it.OwnerUIDs, types.UID(fmt.Sprintf("gone-%03d", i)))
				default:
					it.OwnerUIDs = append(it.OwnerUIDs, it.UID) // itself
				}
			}
			_, err := m.Add(it)
			require.NoError(t, err)
			uids, items = append(uids, it.UID), append(items, it)
		}
		g, _ := New(m, Options{})

		sorted := m.Items()
		pos := map[types.UID]int{}
		for i, it := range sorted {
			pos[it.UID] = i
		}
		want := map[[2]int]bool{}
		var warned []string
		for i, it := range sorted {
			for _, uid := range it.OwnerUIDs {
				o, ok := pos[uid]
				switch {
				case !ok:
					warned = append(warned, it.Name+": owner "+string(uid)+" is not in the backup; restored without it")
				case o == i:
					warned = append(warned, it.Name+": owner edge to itself dropped")
				default:
					want[[2]int{o, i}] = true
				}
			}
		}
		got := map[[2]int]bool{}
		for v := range g.Len() {
			for k, u := range g.Predecessors(int64(v)) {
				if g.pred.kindsOf(int32(v))[k]&EdgeOwner != 0 {
					got[[2]int{int(u), v}] = true
				}
			}
		}
		require.Equal(t, want, got, "seed %d", seed)
		var gotWarned []string
		for _, w := range g.Warnings() {
			gotWarned = append(gotWarned, w.Node.Item.Name+": "+w.Message)
		}
		require.Equal(t, warned, gotWarned, "seed %d", seed)
	}
}

// TestAnObjectWithThousandsOfOwners: the manifest format sets no bound on an object's
// owner references. An object listing thousands, in the reverse of the items' order and
// some twice, gets each owner once as a predecessor, in order, with the kinds of an
// owner that is also its namespace's object merged.
func TestAnObjectWithThousandsOfOwners(t *testing.T) {
	const owners = 3000
	f := newFixture()
	ns := f.add("", "Namespace", "namespaces", "", "a")
	var list []*manifest.Item
	for i := range owners {
		list = append(list, f.add("", "ConfigMap", "configmaps", "a", fmt.Sprintf("owner-%04d", i)))
	}
	dependent := f.add("example.io", "Thing", "things", "a", "dependent", func(it *manifest.Item) {
		for i := owners - 1; i >= 0; i-- {
			it.OwnerUIDs = append(it.OwnerUIDs, list[i].UID)
			if i%10 == 0 {
				it.OwnerUIDs = append(it.OwnerUIDs, list[i].UID)
			}
		}
		it.OwnerUIDs = append(it.OwnerUIDs, ns.UID)
	})
	g, err := New(f.m, Options{})
	require.NoError(t, err)

	want := []int32{int32(node(t, g, ns).ID())}
	for _, o := range list {
		want = append(want, int32(node(t, g, o).ID()))
	}
	slices.Sort(want)
	d := node(t, g, dependent).ID()
	assert.Equal(t, want, g.Predecessors(d), "each owner once, in order")
	assert.Equal(t, EdgeOwner|EdgeNamespace, kindsOf(t, g, ns, dependent))
	assert.Equal(t, EdgeOwner, kindsOf(t, g, list[owners/2], dependent))
	assert.Equal(t, owners+1+owners, g.EdgeCount(), "the namespace's edges and the owners'")
	assertTopological(t, g)
	assert.Empty(t, g.Warnings())
}

// TestAnObjectThatDependsOnThousands: a depends-on annotation that names thousands of
// objects, the last first and some twice, gives each one edge, in order, and a warning
// for the one not in the backup, in the annotation's order.
func TestAnObjectThatDependsOnThousands(t *testing.T) {
	const deps = 2000
	f := newFixture()
	var list []*manifest.Item
	var refs []string
	for i := range deps {
		list = append(list, f.add("", "ConfigMap", "configmaps", "a", fmt.Sprintf("c-%04d", i)))
	}
	for i := deps - 1; i >= 0; i-- {
		refs = append(refs, "/namespaces/a/ConfigMap/"+list[i].Name)
		if i%10 == 0 {
			refs = append(refs, "/namespaces/a/ConfigMap/"+list[i].Name)
		}
		if i == deps/2 {
			refs = append(refs, "/namespaces/a/ConfigMap/gone")
		}
	}
	dependent := f.add("example.io", "Thing", "things", "a", "dependent", annotated(DependsOnAnnotation, strings.Join(refs, ",")))
	g, err := New(f.m, Options{})
	require.NoError(t, err)

	var want []int32
	for _, o := range list {
		want = append(want, int32(node(t, g, o).ID()))
	}
	slices.Sort(want)
	assert.Equal(t, want, g.Predecessors(node(t, g, dependent).ID()), "each once, in order")
	assert.Equal(t, EdgeDependsOn, kindsOf(t, g, list[deps/3], dependent))
	assert.Equal(t, deps, g.EdgeCount())
	require.Len(t, g.Warnings(), 1)
	assert.Contains(t, g.Warnings()[0].Message, "/namespaces/a/ConfigMap/gone")
	assertTopological(t, g)
}

// A detached item's owners are not its predecessors; a rule may order it before them
// without a cycle, and the other items keep their owner edges.
func TestDetachedItemsComeApartFromTheirOwners(t *testing.T) {
	f := newFixture()
	rs := f.add("apps", "ReplicaSet", "replicasets", "ns", "web")
	filled := f.add("", "Pod", "pods", "ns", "web-1", ownedBy(rs))
	other := f.add("", "Pod", "pods", "ns", "web-2", ownedBy(rs))
	g, err := New(f.m, Options{Rules: []Rule{edgeRule{filled, rs}}, Detach: func(it *manifest.Item) bool { return it == filled }})
	require.NoError(t, err)
	assert.Zero(t, kindsOf(t, g, rs, filled)&EdgeOwner, "no owner edge to the detached pod")
	assert.NotZero(t, kindsOf(t, g, filled, rs), "the rule orders the pod first")
	assert.Equal(t, EdgeOwner, kindsOf(t, g, rs, other))
}

// edgeRule orders its first item before its second.
type edgeRule [2]*manifest.Item

func (edgeRule) Name() string { return "edge" }

func (r edgeRule) AddEdges(b *RuleBuilder) {
	b.Edge(slices.Index(b.Items(), r[0]), slices.Index(b.Items(), r[1]))
}
