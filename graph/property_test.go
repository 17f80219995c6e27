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
		m.Add(&manifest.Item{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "n",
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
		for _, v := range g.out[u] {
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
			for _, v := range g.out[u] {
				if !g.IsBlocked(int64(v)) { // blocked successors never run
					best = max(best, longest(int(v)))
				}
			}
			return 1 + best
		}
		for _, nd := range g.Order() {
			require.Equal(t, longest(int(nd.ID())), lr[nd.ID()], "seed %d", seed)
		}

		// Incremental edges: refused exactly when they would close a cycle.
		for range 20 {
			u, v := int64(rng.IntN(n)), int64(rng.IntN(n))
			if g.IsBlocked(u) || g.IsBlocked(v) {
				continue
			}
			reach = closure(g)
			wouldCycle := u == v || reach[v][u]
			require.Equal(t, wouldCycle, g.WouldCycle(u, v), "seed %d edge %d->%d", seed, u, v)
			err := g.AddEdge(u, v, EdgeAdditionalItem)
			require.Equal(t, wouldCycle, err != nil, "seed %d edge %d->%d: %v", seed, u, v, err)
			assertTopological(t, g)
		}
	}
}
