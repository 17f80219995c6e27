package scheduler

import (
	"context"
	"iter"
	"math"
	"runtime"
	"time"
)

// DAG is what Run walks: nodes 0 to Len()-1 and their edges. *graph.Graph satisfies it.
// An edge u → v means v runs only after u succeeded.
type DAG interface {
	Len() int
	Successors(node int64) []int32
	Predecessors(node int64) []int32
}

// Func runs one node. It is called at most once per node; n is valid until it returns.
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

// Report holds how every node ended. It keeps a compact record per node (24 bytes),
// and what only some nodes have (an error, what blocked a skipped node, time spent in
// Await) by node, and makes each Result when asked.
type Report struct {
	recs    []record
	errs    map[int32]error
	blocked map[int32]blocked
	waited  map[int32]time.Duration
	t0      time.Time // the times' origin
}

// record is how one node ended, as a run keeps it: its times as nanoseconds after the
// run's start (noTime when not reached).
type record struct {
	start, end int64
	worker     int32
	status     uint8 // an index into statuses
}

// blocked is what kept a skipped node from running: the failed node, and the chain
// from it.
type blocked struct {
	by    int32
	chain []int64
}

// statuses are the records' status bytes; 0 is not ended yet.
var statuses = [...]Status{"", Succeeded, Failed, Skipped, Cancelled}

// statusIndex returns s's index in statuses, and whether it is there.
func statusIndex(s Status) (uint8, bool) {
	for i, known := range statuses {
		if known == s {
			return uint8(i), true
		}
	}
	return 0, false
}

const noTime = math.MinInt64

// Len returns the number of nodes.
func (r *Report) Len() int { return len(r.recs) }

// Result returns how node ended.
func (r *Report) Result(node int64) Result {
	rec := &r.recs[node]
	b, ok := r.blocked[int32(node)]
	if !ok {
		b.by = -1
	}
	return Result{Status: statuses[rec.status], Err: r.errs[int32(node)], BlockedBy: int64(b.by), Chain: b.chain,
		Start: r.time(rec.start), End: r.time(rec.end), Waited: r.waited[int32(node)], Worker: int(rec.worker)}
}

// All iterates every node's result, by node.
func (r *Report) All() iter.Seq2[int64, Result] {
	return func(yield func(int64, Result) bool) {
		for i := range r.recs {
			if !yield(int64(i), r.Result(int64(i))) {
				return
			}
		}
	}
}

// Count returns the number of nodes that ended with s.
func (r *Report) Count(s Status) int {
	idx, ok := statusIndex(s)
	if !ok {
		return 0
	}
	n := 0
	for i := range r.recs {
		if r.recs[i].status == idx {
			n++
		}
	}
	return n
}

func (r *Report) time(ns int64) time.Time {
	if ns == noTime {
		return time.Time{}
	}
	return r.t0.Add(time.Duration(ns))
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
	// Ties, when not nil, orders the nodes whose priorities are equal in place of their
	// IDs: a permutation of every node, Ties[0] first. Run fails with a *TiesError
	// before it starts any node when it is not one.
	Ties []int32
	// FailFast cancels every node not yet started at the first failure.
	FailFast bool
	// OnEvent receives events, from one goroutine, in the order they happened.
	OnEvent func(Event)
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Run executes fn for every node of dag and reports how each ended. Its error is a
// fault of the run itself, whatever stopped it before every node ran: the context's
// cause when it was cancelled, a node function's panic (a *PanicError), or with
// FailFast the first failure. Otherwise it is nil,
// and each node's own failure is in the report.
//
// The workers are an errgroup. Its limit is not errgroup's SetLimit but the run's own
// count of slots, because a node blocked in Await hands its slot to another worker (a
// parked one, or a new goroutine) and takes one back from a worker that then parks: a
// limit on goroutines would hold the slot of every awaiting node.
func Run(ctx context.Context, dag DAG, fn Func, opts Options) (*Report, error) {
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Ties != nil {
		if err := checkTies(opts.Ties, dag.Len()); err != nil {
			return nil, err
		}
	}
	r := newRun(ctx, dag, fn, opts)
	defer r.cancel(nil)
	if r.events != nil {
		go r.events.deliver(opts.OnEvent)
	}
	stop := context.AfterFunc(r.ctx, r.onCancel)
	r.mu.Lock()
	r.skipCycles()
	r.order = nil
	for range opts.Workers {
		r.spawnWorker()
	}
	r.mu.Unlock()
	err := r.workers.Wait()
	stop()
	if r.events != nil {
		r.events.close()
	}
	rep := r.rep // not &r.rep: the report would keep the whole run alive
	return &rep, err
}
