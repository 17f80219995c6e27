package scheduler

import "math"

// queue is a 4-ary max-heap of ready nodes. Each entry is one uint64 key: the priority
// as order-preserving float32 bits in the high half, the inverted node ID in the low
// half. One integer comparison orders two entries by priority and then by lower ID, and
// the four children of an entry take half a cache line. Priorities are compared at
// float32 precision; nodes whose priorities are equal at that precision go by ID.
// The heap records each node's place, so that a node can be raised or removed, and it
// never allocates per push or pop.
type queue struct {
	prio  []float64 // each node's priority, read on push
	heap  []uint64
	index []int32 // position of each node in heap, -1 when absent
}

func newQueue(prio []float64, n int) queue {
	q := queue{prio: prio, heap: make([]uint64, 0, n), index: make([]int32, n)}
	for i := range q.index {
		q.index[i] = -1
	}
	return q
}

// key packs a priority and a node ID; a larger key runs first.
func key(prio float64, id int32) uint64 {
	bits := math.Float32bits(float32(prio))
	if bits&(1<<31) != 0 {
		bits = ^bits // negative: reverse their order
	} else {
		bits |= 1 << 31 // positive: above every negative
	}
	return uint64(bits)<<32 | uint64(math.MaxUint32-uint32(id))
}

func idOf(k uint64) int32 { return int32(math.MaxUint32 - uint32(k)) }

func (q *queue) len() int { return len(q.heap) }

func (q *queue) set(i int, k uint64) {
	q.heap[i] = k
	q.index[idOf(k)] = int32(i)
}

// init builds the heap from ids in linear time.
func (q *queue) init(ids []int32) {
	for _, v := range ids {
		q.index[v] = int32(len(q.heap))
		q.heap = append(q.heap, key(q.prio[v], v))
	}
	for i := (len(q.heap) - 2) / 4; i >= 0; i-- {
		q.down(i)
	}
}

func (q *queue) push(v int32) {
	q.heap = append(q.heap, 0)
	q.up(len(q.heap)-1, key(q.prio[v], v))
}

func (q *queue) pop() int32 {
	v := idOf(q.heap[0])
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
		q.up(int(i), key(p, v))
	}
}

func (q *queue) removeAt(i int) {
	v := idOf(q.heap[i])
	last := len(q.heap) - 1
	moved := q.heap[last]
	q.heap = q.heap[:last]
	q.index[v] = -1
	if i == last {
		return
	}
	q.set(i, moved)
	q.down(i)
	q.up(int(q.index[idOf(moved)]), moved)
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
