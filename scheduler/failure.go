package scheduler

import (
	"context"
	"fmt"

	"github.com/restoregraph/restoregraph/internal/toposort"
)

// report marks u done with status and wakes the nodes awaiting it.
func (r *run) report(u int32, status Status, err error, ev Event) {
	r.state[u] = done
	rec := &r.rep.recs[u]
	rec.status, _ = statusIndex(status) // one of the four a run reports
	if err != nil {
		r.rep.errs[u] = err
	}
	r.remaining--
	ev.Node, ev.Worker = int64(u), int(rec.worker)
	if ev.Time.IsZero() {
		ev.Time = r.opts.Now()
	}
	r.emit(ev)
	r.wakeAwaiters(u, status)
}

// skipDescendants reports every not-started descendant of the failed node u as Skipped,
// with the chain from u. Breadth first, so each chain is a shortest one.
func (r *run) skipDescendants(u int32) {
	parent := map[int32]int32{}
	queue := []int32{u}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, v := range r.dag.Successors(int64(x)) {
			if r.state[v] != pending && r.state[v] != queued {
				continue
			}
			if _, seen := parent[v]; seen {
				continue
			}
			parent[v] = x
			queue = append(queue, v)
			chain := []int64{int64(v)}
			for w := x; w != u; w = parent[w] {
				chain = append(chain, int64(w))
			}
			chain = append(chain, int64(u))
			for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
				chain[i], chain[j] = chain[j], chain[i]
			}
			if r.state[v] == queued {
				r.ready.remove(v)
			}
			r.rep.blocked[v] = blocked{by: u, chain: chain}
			r.report(v, Skipped, fmt.Errorf("%w: node %d failed", ErrDependencyFailed, u), Event{Type: SkippedEvent})
		}
	}
}

// skipCycles reports the nodes on or behind a cycle of the DAG: they can never start.
func (r *run) skipCycles() {
	n := len(r.state)
	if len(r.order) == n {
		return
	}
	for i, cut := range toposort.Unordered(n, r.order) {
		if cut {
			r.report(int32(i), Skipped, ErrCycle, Event{Type: SkippedEvent, Err: ErrCycle})
		}
	}
}

// onCancel runs when the run's context is done.
func (r *run) onCancel() {
	r.mu.Lock()
	r.stopLocked(context.Cause(r.ctx))
	r.mu.Unlock()
}

// stopLocked starts nothing more: every node not started is reported Cancelled.
func (r *run) stopLocked(cause error) {
	if r.stopped {
		return
	}
	r.stopped = true
	r.cancel(cause)
	for i, s := range r.state {
		if s == pending || s == queued {
			if s == queued {
				r.ready.remove(int32(i))
			}
			r.report(int32(i), Cancelled, cause, Event{Type: CancelledEvent, Err: cause})
		}
	}
	r.cond.Broadcast()
}

func (r *run) emit(ev Event) {
	if r.events != nil {
		r.events.push(ev)
	}
}
