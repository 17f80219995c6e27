package scheduler

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// DAG is what Run walks: nodes 0 to Len()-1 and their edges. *graph.Graph satisfies it.
// An edge u → v means v runs only after u succeeded.
type DAG interface {
	Len() int
	Successors(node int64) []int32
	Predecessors(node int64) []int32
}

// Func runs one node. It is called at most once per node.
type Func func(ctx context.Context, n *Node) error

// Status is how a node ended.
type Status string

const (
	Succeeded Status = "Succeeded"
	Failed    Status = "Failed"
	Skipped   Status = "Skipped"
	Cancelled Status = "Cancelled"
)

// Result is how one node ended.
type Result struct {
	Status Status
	Err    error // the node's error, a *PanicError, ErrCycle, or the cancellation cause
	// BlockedBy is the failed ancestor of a Skipped node, -1 otherwise; Chain runs from
	// it to the node, both included.
	BlockedBy int64
	Chain     []int64
	// Start and End bound the node function's run; Waited sums the time spent in Await.
	Start, End time.Time
	Waited     time.Duration
	Worker     int
}

// Report holds every node's result, indexed by node.
type Report struct {
	Results []Result
}

// Count returns the number of nodes that ended with s.
func (r *Report) Count(s Status) int {
	n := 0
	for i := range r.Results {
		if r.Results[i].Status == s {
			n++
		}
	}
	return n
}

// Options tune Run. The zero value is usable.
type Options struct {
	// Workers bounds the node functions executing at once; default GOMAXPROCS.
	Workers int
	// Priority orders ready nodes, higher first, compared at float32 precision (ties go
	// to the lower ID). Default: longest remaining path, with Weight as each node's
	// expected duration.
	Priority func(node int64) float64
	// Weight is a node's expected duration for the default priority; default 1.
	Weight func(node int64) float64
	// FailFast cancels every node not yet started at the first failure.
	FailFast bool
	// OnEvent receives events, from one goroutine, in the order they happened.
	OnEvent func(Event)
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Run executes fn for every node of dag and reports how each ended. Its error is the
// context's when it was cancelled, else nil: node failures are in the report.
func Run(ctx context.Context, dag DAG, fn Func, opts Options) (*Report, error) {
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := newRun(ctx, dag, fn, opts)
	defer r.cancel(nil)
	if r.events != nil {
		go r.events.deliver(opts.OnEvent)
	}
	stop := context.AfterFunc(r.ctx, r.onCancel)
	r.mu.Lock()
	r.skipCycles()
	for range opts.Workers {
		r.spawnWorker()
	}
	r.mu.Unlock()
	r.eg.Wait()
	stop()
	if r.events != nil {
		r.events.close()
	}
	return &Report{Results: r.results}, ctx.Err()
}

// run is the state of one Run.
type run struct {
	dag    DAG
	fn     Func
	opts   Options
	ctx    context.Context
	cancel context.CancelCauseFunc
	eg     errgroup.Group
	events *eventQueue

	mu         sync.Mutex
	cond       sync.Cond // workers wait here for ready nodes, resumers, or the end
	state      []state
	indeg      []int32
	prio       []float64
	ready      queue
	results    []Result
	nodes      []Node
	remaining  int     // nodes not yet reported
	resumers   []*Node // awaiting nodes whose dependencies finished, wanting a slot back
	dyn        map[int32][]int32
	nextWorker int
	stopped    bool // cancelled: start nothing new
	acyclic    bool // known to have no cycle: skipCycles has nothing to do
}

type state uint8

const (
	pending state = iota
	queued
	running
	awaitingState
	done
)

func newRun(ctx context.Context, dag DAG, fn Func, opts Options) *run {
	n := dag.Len()
	r := &run{
		dag: dag, fn: fn, opts: opts,
		state: make([]state, n), indeg: make([]int32, n), results: make([]Result, n), nodes: make([]Node, n),
		remaining: n,
	}
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	r.cond.L = &r.mu
	if opts.OnEvent != nil {
		r.events = newEventQueue()
	}
	for i := range n {
		r.indeg[i] = int32(len(dag.Predecessors(int64(i))))
		r.nodes[i] = Node{id: int64(i), r: r}
		r.results[i].BlockedBy = -1
	}
	if opts.Priority != nil {
		r.prio = make([]float64, n)
		for i := range n {
			r.prio[i] = opts.Priority(int64(i))
		}
	} else {
		r.prio, r.acyclic = longestRemaining(dag, opts.Weight)
	}
	r.ready = newQueue(r.prio, n)
	var roots []int32
	for i := range n {
		if r.indeg[i] == 0 {
			r.state[i] = queued
			roots = append(roots, int32(i))
		}
	}
	r.ready.init(roots)
	return r
}

func (r *run) spawnWorker() {
	id := r.nextWorker
	r.nextWorker++
	r.eg.Go(func() error { r.worker(id); return nil })
}

// worker runs ready nodes until every node is reported. Before anything else it hands
// its slot to a node coming back from Await, and retires.
func (r *run) worker(id int) {
	r.mu.Lock()
	var now time.Time // the clock read when the last node ended, reused to start the next
	for {
		if len(r.resumers) > 0 {
			n := r.resumers[0]
			r.resumers = r.resumers[1:]
			close(n.aw.slot)
			if r.ready.len() > 0 {
				r.cond.Signal() // this worker may have released nodes it will not run now
			}
			r.mu.Unlock()
			return
		}
		if r.remaining == 0 {
			r.cond.Broadcast()
			r.mu.Unlock()
			return
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
		res := &r.results[u]
		res.Worker = id
		if res.Start = now; now.IsZero() {
			res.Start = r.opts.Now()
		}
		r.emit(Event{Type: Started, Node: int64(u), Time: res.Start, Worker: id})
		r.mu.Unlock()

		err := r.execute(u, id)

		now = r.opts.Now()
		r.mu.Lock()
		r.finish(u, err, now)
	}
}

// execute runs the node function, turning a panic into a *PanicError.
func (r *run) execute(u int32, worker int) (err error) {
	n := &r.nodes[u]
	n.worker = worker
	defer func() {
		if p := recover(); p != nil {
			err = newPanicError(p)
		}
	}()
	return r.fn(r.ctx, n)
}

// finish records how a started node ended and releases or skips what depends on it.
func (r *run) finish(u int32, err error, now time.Time) {
	res := &r.results[u]
	res.End = now
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
	if r.opts.FailFast {
		r.stopLocked(fmt.Errorf("scheduler: stopped at the first failure: node %d: %w", u, err))
	}
	r.cond.Broadcast()
}

// report marks u done with status and wakes the nodes awaiting it.
func (r *run) report(u int32, status Status, err error, ev Event) {
	r.state[u] = done
	res := &r.results[u]
	res.Status, res.Err = status, err
	r.remaining--
	ev.Node, ev.Worker = int64(u), res.Worker
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
			res := &r.results[v]
			res.BlockedBy, res.Chain = int64(u), chain
			r.report(v, Skipped, fmt.Errorf("%w: node %d failed", ErrDependencyFailed, u), Event{Type: SkippedEvent})
		}
	}
}

// skipCycles reports the nodes on or behind a cycle of the DAG: they can never start.
func (r *run) skipCycles() {
	if r.acyclic {
		return
	}
	n := len(r.state)
	indeg := make([]int32, n)
	copy(indeg, r.indeg)
	queue := make([]int32, 0, n)
	for i := range n {
		if indeg[i] == 0 {
			queue = append(queue, int32(i))
		}
	}
	for head := 0; head < len(queue); head++ {
		for _, v := range r.dag.Successors(int64(queue[head])) {
			if indeg[v]--; indeg[v] == 0 {
				queue = append(queue, v)
			}
		}
	}
	if len(queue) == n {
		return
	}
	reached := make([]bool, n)
	for _, u := range queue {
		reached[u] = true
	}
	for i := range n {
		if !reached[i] {
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
