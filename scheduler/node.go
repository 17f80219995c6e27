package scheduler

import (
	"fmt"
	"math"
)

// Node is a running node's handle, given to its Func.
type Node struct {
	id     int64
	r      *run
	worker int
}

// awaiting is the state of a node in Await, guarded by run.mu.
type awaiting struct {
	pending int           // awaited nodes not finished yet
	err     error         // the first awaited node that did not succeed
	slot    chan struct{} // closed by the worker that hands this node its slot
}

// ID returns the node's ID.
func (n *Node) ID() int64 { return n.id }

// Worker returns the ID of the worker running the node.
func (n *Node) Worker() int { return n.worker }

// Await declares that the node now also depends on ids, and returns once they have all
// finished. While it waits the node gives up its worker slot; the awaited nodes, and
// their unfinished ancestors, are raised above every other ready node.
//
// It returns a *CycleError at once, awaiting nothing, when one of ids cannot finish
// before this node does (it depends on it, directly or through other awaits); an error
// wrapping ErrDependencyFailed when an awaited node failed, was skipped or cancelled;
// nil when all succeeded.
func (n *Node) Await(ids ...int64) error {
	r := n.r
	r.mu.Lock()
	var waitFor []int32
	for _, id := range ids {
		if id < 0 || id >= int64(len(r.state)) {
			r.mu.Unlock()
			return fmt.Errorf("scheduler: node %d awaits %d, which is not a node", n.id, id)
		}
		v := int32(id)
		switch {
		case id == n.id:
			r.mu.Unlock()
			return &CycleError{Node: n.id, Awaited: id}
		case r.state[v] == done:
			if s := statuses[r.rep.recs[v].status]; s != Succeeded {
				r.mu.Unlock()
				return &AwaitError{Node: id, Status: s}
			}
		case r.reaches(int32(n.id), v):
			r.mu.Unlock()
			return &CycleError{Node: n.id, Awaited: id}
		default:
			waitFor = append(waitFor, v)
		}
	}
	if len(waitFor) == 0 {
		r.mu.Unlock()
		return nil
	}
	if r.dyn == nil {
		r.dyn = map[int32][]int32{}
	}
	for _, v := range waitFor {
		r.dyn[v] = append(r.dyn[v], int32(n.id))
		r.boost(v)
	}
	aw := &awaiting{pending: len(waitFor), slot: make(chan struct{})}
	if r.awaiting == nil {
		r.awaiting = map[int32]*awaiting{}
	}
	r.awaiting[int32(n.id)] = aw
	r.state[n.id] = awaitingState
	start := r.opts.Now()
	r.emit(Event{Type: Waiting, Node: n.id, Time: start, Worker: n.worker, Awaited: ids})
	r.spawnWorker() // the slot given up goes to another worker
	r.mu.Unlock()

	<-aw.slot // once what it awaits has finished (wakeAwaiters), a worker's slot

	r.mu.Lock()
	defer r.mu.Unlock()
	r.state[n.id] = running
	end := r.opts.Now()
	r.rep.waited[int32(n.id)] += end.Sub(start)
	delete(r.awaiting, int32(n.id))
	r.emit(Event{Type: Resumed, Node: n.id, Time: end, Worker: n.worker})
	return aw.err
}

// reaches reports whether from reaches to along static edges and awaits, through
// unfinished nodes: whether to can only finish after from.
func (r *run) reaches(from, to int32) bool {
	seen := map[int32]bool{from: true}
	stack := []int32{from}
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		next := r.dag.Successors(int64(u))
		for _, vs := range [2][]int32{next, r.dyn[u]} {
			for _, v := range vs {
				if v == to {
					return true
				}
				if !seen[v] && r.state[v] != done {
					seen[v] = true
					stack = append(stack, v)
				}
			}
		}
	}
	return false
}

// boost raises v and its unfinished ancestors above every other node.
func (r *run) boost(v int32) {
	stack := []int32{v}
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if r.state[u] == done || math.IsInf(r.prio[u], 1) {
			continue
		}
		if r.state[u] == queued {
			r.ready.raise(u, math.Inf(1))
		} else {
			r.prio[u] = math.Inf(1)
		}
		stack = append(stack, r.dag.Predecessors(int64(u))...)
	}
}

// wakeAwaiters tells the nodes awaiting u that it finished: one that awaits nothing
// more wants a slot back, before any ready node gets one. It is queued here, under the
// lock the worker that finished u still holds, so that this worker hands it its slot
// next rather than starting a ready node first (and the resumed node's worker parks
// for the next Await to reuse).
func (r *run) wakeAwaiters(u int32, status Status) {
	for _, w := range r.dyn[u] {
		aw := r.awaiting[w]
		if status != Succeeded && aw.err == nil {
			aw.err = &AwaitError{Node: int64(u), Status: status}
		}
		if aw.pending--; aw.pending == 0 {
			r.resumers = append(r.resumers, aw)
			r.cond.Broadcast()
		}
	}
	delete(r.dyn, u)
}
