package toposort

import (
	"math/rand/v2"
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

func TestOrderFromLeavesEachNodesPosition(t *testing.T) {
	indegOf := func(g adj) []int32 {
		indeg := make([]int32, g.Len())
		for v := range indeg {
			indeg[v] = int32(len(g.Predecessors(int64(v))))
		}
		return indeg
	}
	// 3 → 1 → 0, 2 → 0: released 2, 3, then 1, then 0
	g := adj{{}, {0}, {0}, {1}}
	indeg := indegOf(g)
	assert.Equal(t, []int32{2, 3, 1, 0}, OrderFrom(g, indeg, nil))
	assert.Equal(t, []int32{3, 2, 0, 1}, indeg, "node v's position in the order")

	// 0 → 1 ⇄ 2 → 3, and 4 alone: the cycle's nodes and what is behind it have none
	g = adj{{1}, {2}, {1, 3}, {}, {}}
	indeg = indegOf(g)
	assert.Equal(t, []int32{0, 4}, OrderFrom(g, indeg, nil))
	assert.Equal(t, []int32{0, -1, -1, -1, 1}, indeg)
}

func TestLongestRemainingBehindAndBeforeACycle(t *testing.T) {
	// 0 → 1 ⇄ 2, 0 → 3 → 4: 0 is ordered, with a successor on the cycle
	g := adj{{1, 3}, {2}, {1}, {4}, {}}
	order := Order(g)
	assert.Equal(t, []int32{0, 3, 4}, order)
	assert.Equal(t, []float64{3, 0, 0, 2, 1}, LongestRemaining(g, order, nil))
}

// walkedBack is the definition LongestRemaining must agree with: each node of order,
// walked from the last, weighs its own weight plus the heaviest of its successors'.
func walkedBack(dag DAG, order []int32, weight func(int32) float64) []float64 {
	lr := make([]float64, dag.Len())
	for i := len(order) - 1; i >= 0; i-- {
		u := order[i]
		best := 0.0
		for _, v := range dag.Successors(int64(u)) {
			best = max(best, lr[v])
		}
		lr[u] = weight(u) + best
	}
	return lr
}

func TestLongestRemainingAgreesWithTheWalkBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cycles := 0
	for range 500 {
		n := 1 + rng.IntN(40)
		g := make(adj, n)
		for range rng.IntN(3 * n) {
			u, v := rng.IntN(n), rng.IntN(n)
			if u == v || rng.IntN(20) > 0 && u > v { // mostly forward edges, now and then a cycle
				continue
			}
			g[u] = append(g[u], int32(v))
		}
		weights := make([]float64, n)
		for i := range weights {
			weights[i] = float64(rng.IntN(5)) // zero, as a barrier weighs, among them
		}
		w := func(u int32) float64 { return weights[u] }
		order := Order(g)
		if len(order) < n {
			cycles++
		}
		weighed := make([]int, n)
		counted := func(u int32) float64 { weighed[u]++; return w(u) }
		assert.Equal(t, walkedBack(g, order, w), LongestRemaining(g, order, counted), "graph %v, weights %v", g, weights)
		want := make([]int, n)
		for _, u := range order {
			want[u] = 1
		}
		assert.Equal(t, want, weighed, "each ordered node weighed once, the rest never: graph %v", g)
	}
	assert.Greater(t, cycles, 20, "the graphs include cycles")
}

// A buffer with room for every node takes the order in place; one without is left
// alone.
func TestOrderFromWritesOverABufferWithRoom(t *testing.T) {
	g := adj{{}, {0}, {0}, {1}}
	indeg := []int32{2, 1, 0, 0}
	buf := []int32{9, 9, 9, 9}
	order := OrderFrom(g, indeg, buf)
	assert.Equal(t, []int32{2, 3, 1, 0}, order)
	assert.Same(t, &buf[0], &order[0], "written over buf")

	indeg = []int32{2, 1, 0, 0}
	short := []int32{9, 9, 9}
	assert.Equal(t, []int32{2, 3, 1, 0}, OrderFrom(g, indeg, short))
	assert.Equal(t, []int32{9, 9, 9}, short, "too short: not written")
}
