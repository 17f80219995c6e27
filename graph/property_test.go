package graph

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/restoregraph/restoregraph/manifest"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// randomManifest makes n objects with random owner references; acyclic owners point
// from lower to higher index only.
func randomManifest(rng *rand.Rand, n int, edges int, acyclic bool) *manifest.Manifest {
	owners := make([][]types.UID, n)
	uid := func(i int) types.UID { return types.UID(fmt.Sprintf("u%03d", i)) }
	for range edges {
		a, b := rng.IntN(n), rng.IntN(n)
		if a == b {
			continue
		}
		if acyclic && a > b {
			a, b = b, a
		}
		owners[b] = append(owners[b], uid(a))
	}
	m := manifest.New(n)
	for i := range n {
		m.Add(&manifest.Item{Type: &manifest.Type{Version: "v1", Kind: "ConfigMap", Resource: "configmaps"}, Namespace: "n",
			Name: fmt.Sprintf("o%03d", i), UID: uid(i), OwnerUIDs: owners[i]})
	}
	return m
}

// closure returns reach[u][v]: a path of one or more edges from u to v.
func closure(g *Graph) [][]bool {
	n := g.Len()
	reach := make([][]bool, n)
	for u := range n {
		reach[u] = make([]bool, n)
		for _, v := range g.Successors(int64(u)) {
			reach[u][v] = true
		}
	}
	for k := range n {
		for i := range n {
			if reach[i][k] {
				for j := range n {
					reach[i][j] = reach[i][j] || reach[k][j]
				}
			}
		}
	}
	return reach
}

func TestPropertiesOnRandomGraphs(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 2 + rng.IntN(30)
		g, err := New(randomManifest(rng, n, rng.IntN(2*n), seed%3 != 0), Options{})
		reach := closure(g)

		// Blocked: exactly the nodes on a cycle or reachable from one.
		onCycle := func(u int) bool { return reach[u][u] }
		wantBlocked := 0
		for v := range n {
			want := onCycle(v)
			for u := 0; u < n && !want; u++ {
				want = onCycle(u) && reach[u][v]
			}
			require.Equal(t, want, g.IsBlocked(int64(v)), "seed %d node %d", seed, v)
			if want {
				wantBlocked++
			}
		}
		if wantBlocked > 0 {
			var ce *CycleError
			require.ErrorAs(t, err, &ce, "seed %d", seed)
			require.Equal(t, wantBlocked, ce.Blocked)
			for _, c := range ce.Cycles {
				for i, nd := range c.Nodes {
					next := c.Nodes[(i+1)%len(c.Nodes)]
					require.True(t, g.HasEdgeFromTo(nd.ID(), next.ID()), "seed %d: reported cycle has no edge %s -> %s", seed, nd, next)
				}
			}
		} else {
			require.NoError(t, err)
		}

		// Order: every unblocked node once, after all its predecessors.
		require.Len(t, g.Order(), n-wantBlocked)
		assertTopological(t, g)

		// Longest remaining path, against a brute-force recursion.
		lr := g.LongestRemaining(nil)
		var longest func(u int) float64
		longest = func(u int) float64 {
			best := 0.0
			for _, v := range g.Successors(int64(u)) {
				if !g.IsBlocked(int64(v)) { // blocked successors never run
					best = max(best, longest(int(v)))
				}
			}
			return 1 + best
		}
		for _, nd := range g.Order() {
			require.Equal(t, longest(int(nd.ID())), lr[nd.ID()], "seed %d", seed)
		}

		// Incremental edges: refused exactly when they would close a cycle; the lists
		// of successors and predecessors gain exactly the edges added, however many a
		// node gains and in whatever order.
		edges := edgeSet(t, g)
		for k := range 60 {
			u, v := int64(rng.IntN(n)), int64(rng.IntN(n))
			if g.IsBlocked(u) || g.IsBlocked(v) {
				continue
			}
			reach = closure(g)
			wouldCycle := u == v || reach[v][u]
			require.Equal(t, wouldCycle, g.WouldCycle(u, v), "seed %d edge %d->%d", seed, u, v)
			kind := EdgeAdditionalItem << (k % 2) // EdgeAdditionalItem or the first rule's
			err := g.AddEdge(u, v, kind)
			require.Equal(t, wouldCycle, err != nil, "seed %d edge %d->%d: %v", seed, u, v, err)
			if err == nil {
				edges[[2]int64{u, v}] |= kind
			}
			assertTopological(t, g)
		}
		require.Equal(t, edges, edgeSet(t, g), "seed %d", seed)
		require.Equal(t, len(edges), g.EdgeCount(), "seed %d", seed)
	}
}

// edgeSet returns g's edges with their kinds (which the lists of predecessors keep),
// and requires the lists of successors and of predecessors to hold the same edges and
// every list to be strictly ascending.
func edgeSet(t *testing.T, g *Graph) map[[2]int64]EdgeKind {
	t.Helper()
	ascending := func(l []int32) bool {
		for i := 1; i < len(l); i++ {
			if l[i-1] >= l[i] {
				return false
			}
		}
		return true
	}
	succs, preds := map[[2]int64]EdgeKind{}, map[[2]int64]EdgeKind{}
	for u := range int64(g.Len()) {
		succ, pred := g.Successors(u), g.Predecessors(u)
		require.True(t, ascending(succ), "successors of %d: %v", u, succ)
		require.True(t, ascending(pred), "predecessors of %d: %v", u, pred)
		kinds := func(u, v int64) EdgeKind {
			if e := g.EdgeFromTo(u, v); e != nil {
				return e.Kinds
			}
			return 0 // none, when the predecessors lack the edge
		}
		for _, v := range succ {
			succs[[2]int64{u, int64(v)}] = kinds(u, int64(v))
		}
		for _, p := range pred {
			preds[[2]int64{int64(p), u}] = kinds(int64(p), u)
		}
	}
	require.Equal(t, succs, preds)
	return succs
}
