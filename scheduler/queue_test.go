package scheduler

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestQueueAgainstSort drives the heap with random pushes, pops, removals and raises,
// and checks every pop against a sorted model: ties by ID, or, every other seed, by a
// random order of the nodes.
func TestQueueAgainstSort(t *testing.T) {
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 9))
		n := 1 + rng.IntN(200)
		prio := make([]float64, n)
		for i := range prio {
			prio[i] = float64(rng.IntN(10)) // many ties
		}
		rank := make([]int32, n)
		for i := range rank {
			rank[i] = int32(i)
		}
		var ties []int32
		if seed%2 == 1 {
			ties = make([]int32, n)
			for r, v := range rng.Perm(n) {
				ties[r] = int32(v)
				rank[v] = int32(r)
			}
		}
		q := newQueue(prio, n, ties)
		in := map[int32]bool{}
		var initial []int32
		for i := range n / 2 {
			initial = append(initial, int32(i))
			in[int32(i)] = true
		}
		q.init(initial)
		best := func() int32 {
			ids := make([]int32, 0, len(in))
			for id := range in {
				ids = append(ids, id)
			}
			slices.SortFunc(ids, func(a, b int32) int {
				if prio[a] != prio[b] {
					if prio[a] > prio[b] {
						return -1
					}
					return 1
				}
				return int(rank[a] - rank[b])
			})
			return ids[0]
		}
		for range 500 {
			v := int32(rng.IntN(n))
			switch op := rng.IntN(4); {
			case op == 0 && !in[v]:
				q.push(v)
				in[v] = true
			case op == 1 && len(in) > 0:
				want := best()
				require.Equal(t, want, q.pop(), "seed %d", seed)
				delete(in, want)
			case op == 2 && in[v]:
				q.remove(v)
				delete(in, v)
			case op == 3:
				q.raise(v, prio[v]+float64(rng.IntN(5)))
			}
			require.Equal(t, len(in), q.len())
		}
	}
}
