package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// spawnWorker starts a worker, r.mu held: a parked goroutine, when there is one, or
// else a new one. A node that awaits others gives its slot to a worker started so, and
// takes one back from a worker that then parks; a million-object restore does this
// hundreds of thousands of times. A new goroutine's stack grows again, copied each
// time it doubles, through the restore's deep frames (the decoder's, the
// compressor's): 2% of that restore's CPU, before workers were parked.
func (r *run) spawnWorker() {
	id := r.nextWorker
	r.nextWorker++
	if r.parked > 0 {
		r.parked--
		r.handed = append(r.handed, id)
		r.unpark.Signal()
		return
	}
	r.workers.Go(func() error { return r.worker(id) })
}

// park waits, r.mu held, until spawnWorker hands this goroutine a worker's id, or the
// run ends (false).
func (r *run) park() (int, bool) {
	r.parked++
	for len(r.handed) == 0 && !r.ended {
		r.unpark.Wait()
	}
	if len(r.handed) == 0 {
		return 0, false
	}
	id := r.handed[0]
	r.handed = r.handed[1:]
	return id, true
}

// worker runs ready nodes until every node is reported, and returns why the run
// stopped early, if it did. Before anything else it hands its slot to a node coming
// back from Await, and parks.
func (r *run) worker(id int) error {
	n := &Node{r: r} // this worker's node, while it runs it
	// The worker's nodes run under a context of its own, derived from the run's once: a
	// context a node derives is then registered with it, not with the run's, whose lock
	// and list of children every worker took for each node.
	ctx, cancel := context.WithCancelCause(r.ctx)
	defer cancel(nil)
	r.mu.Lock()
	var now time.Time // the clock read when the last node ended, reused to start the next
	for {
		if len(r.resumers) > 0 {
			aw := r.resumers[0]
			r.resumers = r.resumers[1:]
			close(aw.slot)
			if r.ready.len() > 0 {
				r.cond.Signal() // this worker may have released nodes it will not run now
			}
			var ok bool
			if id, ok = r.park(); !ok {
				r.mu.Unlock()
				return nil
			}
			now = time.Time{}
			continue
		}
		if r.remaining == 0 {
			r.cond.Broadcast()
			r.ended = true
			r.unpark.Broadcast()
			// The run's context may be done before onCancel has stopped it: the node
			// that ended last may have cancelled it.
			var fault error
			if r.stopped || r.ctx.Err() != nil {
				fault = context.Cause(r.ctx)
			}
			r.mu.Unlock()
			return fault
		}
		if !r.stopped && r.ready.len() > 0 {
			select {
			case <-r.ctx.Done(): // AfterFunc's onCancel may not have run yet
				r.stopLocked(context.Cause(r.ctx))
				continue // everything may be reported now: check before waiting
			default:
			}
		}
		if r.stopped || r.ready.len() == 0 {
			r.cond.Wait()
			now = time.Time{}
			continue
		}
		u := r.ready.pop()
		r.state[u] = running
		start := now
		if start.IsZero() {
			start = r.opts.Now()
		}
		rec := &r.rep.recs[u]
		rec.worker, rec.start = int32(id), r.since(start)
		r.emit(Event{Type: Started, Node: int64(u), Time: start, Worker: id})
		r.mu.Unlock()

		*n = Node{id: int64(u), r: r, worker: id}
		err := r.execute(ctx, n)

		now = r.opts.Now()
		r.mu.Lock()
		r.finish(u, err, now)
	}
}

// execute runs the node function under ctx, turning a panic into a *PanicError.
func (r *run) execute(ctx context.Context, n *Node) (err error) {
	defer func() {
		if p := recover(); p != nil {
			pe := newPanicError(p)
			pe.recovered = true
			err = pe
		}
	}()
	return r.fn(ctx, n)
}

// finish records how a started node ended and releases or skips what depends on it.
func (r *run) finish(u int32, err error, now time.Time) {
	r.rep.recs[u].end = r.since(now)
	if err == nil {
		r.report(u, Succeeded, nil, Event{Type: SucceededEvent, Time: now})
		woke := 0
		for _, v := range r.dag.Successors(int64(u)) {
			if r.indeg[v]--; r.indeg[v] == 0 && r.state[v] == pending {
				r.state[v] = queued
				r.ready.push(v)
				woke++
			}
		}
		// The worker that ran u takes one of the released nodes itself; wake one other
		// worker for each of the rest.
		if r.remaining == 0 {
			r.cond.Broadcast()
		}
		for range woke - 1 {
			r.cond.Signal()
		}
		return
	}
	r.report(u, Failed, err, Event{Type: FailedEvent, Err: err, Time: now})
	r.skipDescendants(u)
	var pe *PanicError
	switch {
	case errors.As(err, &pe) && pe.recovered:
		// A panic is a fault of the run: the code that panicked may have left state
		// the other nodes share half written.
		r.stopLocked(fmt.Errorf("scheduler: stopped: node %d: %w", u, pe))
	case r.opts.FailFast:
		r.stopLocked(fmt.Errorf("scheduler: stopped at the first failure: node %d: %w", u, err))
	}
	r.cond.Broadcast()
}

// since is t as a record keeps it: nanoseconds after the run's start.
func (r *run) since(t time.Time) int64 { return int64(t.Sub(r.rep.t0)) }
