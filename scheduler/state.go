package scheduler

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/restoregraph/restoregraph/internal/toposort"
)

// run is the state of one Run.
type run struct {
	dag     DAG
	fn      Func
	opts    Options
	ctx     context.Context
	cancel  context.CancelCauseFunc
	workers *errgroup.Group
	events  *eventQueue

	mu         sync.Mutex
	cond       sync.Cond // workers wait here for ready nodes, resumers, or the end
	state      []state
	indeg      []int32
	prio       []float64
	ready      queue
	rep        Report      // its records are written under mu
	remaining  int         // nodes not yet reported
	resumers   []*awaiting // awaits that nothing holds up any more, each wanting a slot back
	dyn        map[int32][]int32
	awaiting   map[int32]*awaiting // the nodes in Await
	nextWorker int
	// Workers that gave their slot to a resumer wait on unpark, parked, until Await
	// hands one a new worker's id (handed) or the run ends.
	unpark  sync.Cond
	parked  int
	handed  []int
	ended   bool
	stopped bool    // cancelled: start nothing new; context.Cause(ctx) says why
	order   []int32 // a topological order; the nodes missing from it are on or behind a cycle
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
		state: make([]state, n), indeg: make([]int32, n), remaining: n,
		rep: Report{recs: make([]record, n), errs: map[int32]error{}, blocked: map[int32]blocked{}, waited: map[int32]time.Duration{}, t0: opts.Now()},
	}
	// A worker's error ends the run: the group cancels the context every node runs under.
	var gctx context.Context
	r.workers, gctx = errgroup.WithContext(ctx)
	r.ctx, r.cancel = context.WithCancelCause(gctx)
	r.cond.L = &r.mu
	r.unpark.L = &r.mu
	if opts.OnEvent != nil {
		r.events = newEventQueue()
	}
	for i := range n {
		r.indeg[i] = int32(len(dag.Predecessors(int64(i))))
		r.rep.recs[i] = record{start: noTime, end: noTime}
	}
	r.order = toposort.Order(dag)
	if opts.Priority != nil {
		r.prio = make([]float64, n)
		for i := range n {
			r.prio[i] = opts.Priority(int64(i))
		}
	} else {
		var w func(int32) float64
		if opts.Weight != nil {
			w = func(u int32) float64 { return opts.Weight(int64(u)) }
		}
		r.prio = toposort.LongestRemaining(dag, r.order, w)
	}
	r.ready = newQueue(r.prio, n, opts.Ties)
	// What was read from the caller's priorities and ties is the run's own now: the
	// run lets go of theirs (a million nodes' are 12 MB).
	r.opts.Priority, r.opts.Weight, r.opts.Ties = nil, nil, nil
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
