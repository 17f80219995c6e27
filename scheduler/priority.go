package scheduler

// longestRemaining weighs each node by the heaviest path from it to a leaf. It walks
// back from the leaves; acyclic reports whether it reached every node, which proves
// that the DAG has no cycle.
func longestRemaining(dag DAG, weight func(int64) float64) (lr []float64, acyclic bool) {
	n := dag.Len()
	out := make([]int32, n)
	for i := range n {
		out[i] = int32(len(dag.Successors(int64(i))))
	}
	lr = make([]float64, n)
	queue := make([]int32, 0, n) // leaves first, then nodes whose successors are all done
	for i := range n {
		if out[i] == 0 {
			queue = append(queue, int32(i))
		}
	}
	for head := 0; head < len(queue); head++ {
		u := queue[head]
		best := 0.0
		for _, v := range dag.Successors(int64(u)) {
			best = max(best, lr[v])
		}
		w := 1.0
		if weight != nil {
			w = weight(int64(u))
		}
		lr[u] = w + best
		for _, p := range dag.Predecessors(int64(u)) {
			if out[p]--; out[p] == 0 {
				queue = append(queue, p)
			}
		}
	}
	return lr, len(queue) == n
}
