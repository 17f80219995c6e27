package scheduler

import (
	"math"
	"slices"
)

// queue is a 4-ary max-heap of ready nodes. Each entry is one uint64 key: the priority
// as order-preserving float32 bits in the high half, the inverted tie rank in the low
// half. One integer comparison orders two entries by priority and then by lower rank,
// and the four children of an entry take half a cache line. Priorities are compared at
// float32 precision; nodes whose priorities are equal at that precision go by rank,
// which is the node ID unless the run was given Options.Ties.
// The heap records each node's place, so that a node can be raised or removed, and it
// never allocates per push or pop.
type queue struct {
	prio  []float64 // each node's priority, read on push
	heap  []uint64
	index []int32 // position of each node in heap, -1 when absent
	// rank[v] is node v's place among ties and node[r] the node of rank r; both nil
	// when the rank is the ID.
	rank, node []int32
}

// newQueue returns an empty queue of n nodes. ties, when not nil, is a permutation of
// the nodes: ties[r] has rank r.
func newQueue(prio []float64, n int, ties []int32) queue {
	q := queue{prio: prio, heap: make([]uint64, 0, n), index: make([]int32, n)}
	for i := range q.index {
		q.index[i] = -1
	}
	if ties != nil {
		q.node, q.rank = slices.Clone(ties), make([]int32, n) // the caller's may change
		for r, v := range ties {
			q.rank[v] = int32(r)
		}
	}
	return q
}

// key packs v's priority and rank; a larger key runs first.
func (q *queue) key(prio float64, v int32) uint64 {
	bits := math.Float32bits(float32(prio))
	if bits&(1<<31) != 0 {
		bits = ^bits // negative: reverse their order
	} else {
		bits |= 1 << 31 // positive: above every negative
	}
	r := v
	if q.rank != nil {
		r = q.rank[v]
	}
	return uint64(bits)<<32 | uint64(math.MaxUint32-uint32(r))
}

// idOf returns the node of key k.
func (q *queue) idOf(k uint64) int32 {
	r := int32(math.MaxUint32 - uint32(k))
	if q.node != nil {
		return q.node[r]
	}
	return r
}

func (q *queue) len() int { return len(q.heap) }

func (q *queue) set(i int, k uint64) {
	q.heap[i] = k
	q.index[q.idOf(k)] = int32(i)
}

// init builds the heap from ids in linear time.
func (q *queue) init(ids []int32) {
	for _, v := range ids {
		q.index[v] = int32(len(q.heap))
		q.heap = append(q.heap, q.key(q.prio[v], v))
	}
	for i := (len(q.heap) - 2) / 4; i >= 0; i-- {
		q.down(i)
	}
}

func (q *queue) push(v int32) {
	q.heap = append(q.heap, 0)
	q.up(len(q.heap)-1, q.key(q.prio[v], v))
}

func (q *queue) pop() int32 {
	v := q.idOf(q.heap[0])
	q.removeAt(0)
	return v
}

func (q *queue) remove(v int32) {
	if i := q.index[v]; i >= 0 {
		q.removeAt(int(i))
	}
}

// raise sets v's priority to p, which must not be lower than its current one.
func (q *queue) raise(v int32, p float64) {
	q.prio[v] = p
	if i := q.index[v]; i >= 0 {
		q.up(int(i), q.key(p, v))
	}
}

func (q *queue) removeAt(i int) {
	v := q.idOf(q.heap[i])
	last := len(q.heap) - 1
	moved := q.heap[last]
	q.heap = q.heap[:last]
	q.index[v] = -1
	if i == last {
		return
	}
	q.set(i, moved)
	q.down(i)
	q.up(int(q.index[q.idOf(moved)]), moved)
}

// up places k at position i or above.
func (q *queue) up(i int, k uint64) {
	for i > 0 {
		p := (i - 1) / 4
		if q.heap[p] >= k {
			break
		}
		q.set(i, q.heap[p])
		i = p
	}
	q.set(i, k)
}

// down moves the entry at i below larger children.
func (q *queue) down(i int) {
	n := len(q.heap)
	k := q.heap[i]
	for {
		first := 4*i + 1
		if first >= n {
			break
		}
		best := first
		for c := first + 1; c < min(first+4, n); c++ {
			if q.heap[c] > q.heap[best] {
				best = c
			}
		}
		if q.heap[best] <= k {
			break
		}
		q.set(i, q.heap[best])
		i = best
	}
	q.set(i, k)
}
