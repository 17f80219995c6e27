package graph

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAdjacencyListsGrowApart inserts into a few lists, built end to end with no room
// as New builds them, at random places and in turns, far past the room each move gives
// (each list moves many times, the others moving between its moves), and holds every
// list and its kinds to plain slices after each insert.
func TestAdjacencyListsGrowApart(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Three lists of 2, 0 and 1 entries, laid end to end, and a fourth added after.
	a := adjacency{
		span:  []span{{off: 0, n: 2}, {off: 2, n: 0}, {off: 2, n: 1}},
		ids:   []int32{10, 20, 30},
		kinds: []EdgeKind{EdgeOwner, EdgeCRD, EdgeNamespace},
	}
	a.addNode()
	want := [][]int32{{10, 20}, {}, {30}, {}}
	wantKinds := [][]EdgeKind{{EdgeOwner, EdgeCRD}, {}, {EdgeNamespace}, {}}
	for k := range 600 {
		u := int32(rng.IntN(len(want)))
		if k < 300 {
			u = int32(k % 2) // the first two lists in turns, then any
		}
		i := rng.IntN(len(want[u]) + 1)
		v, kind := int32(1000+k), EdgeKind(1)<<(k%4)
		a.insert(u, i, v, kind)
		want[u] = slices.Insert(want[u], i, v)
		wantKinds[u] = slices.Insert(wantKinds[u], i, kind)
		for w := range want {
			require.Equal(t, want[w], append([]int32{}, a.list(int32(w))...), "list %d after insert %d", w, k)
			require.Equal(t, wantKinds[w], append([]EdgeKind{}, a.kindsOf(int32(w))...), "kinds %d after insert %d", w, k)
		}
	}
	// A move doubles a list's room, so the array, with every place a list left, stays
	// within a few times what the lists hold: growth is amortized, not a move an insert.
	total := 0
	for _, l := range want {
		total += len(l)
	}
	require.Less(t, len(a.ids), 3+4*total+64, "the array grew to %d for %d entries", len(a.ids), total)
}
