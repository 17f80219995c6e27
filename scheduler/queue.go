package scheduler

// queue is a 4-ary max-heap of node IDs by priority, ties to the lower ID. Entries carry
// their priority, so comparisons touch only the heap's own memory, and the four
// children of a node (16 bytes each) share one cache line, at half a binary heap's
// depth. It records each
// node's place, so that a node can be raised or removed, and it never boxes: no
// allocation per push or pop.
type queue struct {
	prio  []float64 // each node's priority, read on push
	heap  []entry
	index []int32 // position of each node in heap, -1 when absent
}

type entry struct {
	prio float64
	id   int32
}

func newQueue(prio []float64, n int) queue {
	q := queue{prio: prio, heap: make([]entry, 0, n), index: make([]int32, n)}
	for i := range q.index {
		q.index[i] = -1
	}
	return q
}

func (q *queue) len() int { return len(q.heap) }

func (q *queue) less(i, j int) bool {
	a, b := &q.heap[i], &q.heap[j]
	if a.prio != b.prio {
		return a.prio > b.prio
	}
	return a.id < b.id
}

func (q *queue) swap(i, j int) {
	q.heap[i], q.heap[j] = q.heap[j], q.heap[i]
	q.index[q.heap[i].id] = int32(i)
	q.index[q.heap[j].id] = int32(j)
}

// init builds the heap from ids in linear time.
func (q *queue) init(ids []int32) {
	for _, v := range ids {
		q.index[v] = int32(len(q.heap))
		q.heap = append(q.heap, entry{q.prio[v], v})
	}
	for i := (len(q.heap) - 2) / 4; i >= 0; i-- {
		q.down(i)
	}
}

func (q *queue) push(v int32) {
	q.heap = append(q.heap, entry{q.prio[v], v})
	q.index[v] = int32(len(q.heap) - 1)
	q.up(len(q.heap) - 1)
}

func (q *queue) pop() int32 {
	v := q.heap[0].id
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
		q.heap[i].prio = p
		q.up(int(i))
	}
}

func (q *queue) removeAt(i int) {
	last := len(q.heap) - 1
	v := q.heap[i].id
	if i != last {
		q.swap(i, last)
	}
	q.heap = q.heap[:last]
	q.index[v] = -1
	if i != last {
		q.down(i)
		q.up(i)
	}
}

func (q *queue) up(i int) {
	for i > 0 {
		p := (i - 1) / 4
		if !q.less(i, p) {
			return
		}
		q.swap(i, p)
		i = p
	}
}

func (q *queue) down(i int) {
	n := len(q.heap)
	for {
		first := 4*i + 1
		if first >= n {
			return
		}
		best := first
		for c := first + 1; c < min(first+4, n); c++ {
			if q.less(c, best) {
				best = c
			}
		}
		if !q.less(best, i) {
			return
		}
		q.swap(i, best)
		i = best
	}
}
