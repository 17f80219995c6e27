package toposort

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// adj is a DAG from its successor lists.
type adj [][]int32

func (a adj) Len() int                   { return len(a) }
func (a adj) Successors(u int64) []int32 { return a[u] }
func (a adj) Predecessors(v int64) []int32 {
	var in []int32
	for u, out := range a {
		for _, w := range out {
			if int64(w) == v {
				in = append(in, int32(u))
			}
		}
	}
	return in
}

func TestOrderPutsEachNodeAfterItsPredecessors(t *testing.T) {
	// 0 → 2, 1 → 2, 2 → 3, 0 → 3
	g := adj{{2, 3}, {2}, {3}, {}}
	assert.Equal(t, []int32{0, 1, 2, 3}, Order(g))
	assert.Equal(t, []float64{3, 3, 2, 1}, LongestRemaining(g, Order(g), nil))
	w := func(u int32) float64 { return float64(u + 1) } // node u weighs u+1
	assert.Equal(t, []float64{1 + 3 + 4, 2 + 3 + 4, 3 + 4, 4}, LongestRemaining(g, Order(g), w))
}

func TestOrderLeavesOutCyclesAndWhatIsBehindThem(t *testing.T) {
	// 0 → 1 ⇄ 2 → 3, and 4 alone
	g := adj{{1}, {2}, {1, 3}, {}, {}}
	order := Order(g)
	assert.Equal(t, []int32{0, 4}, order)
	assert.Equal(t, []bool{false, true, true, true, false}, Unordered(g.Len(), order))
	assert.Equal(t, []float64{1, 0, 0, 0, 1}, LongestRemaining(g, order, nil), "the cycle's nodes weigh nothing")
}
