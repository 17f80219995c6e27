package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dag is a test DAG built from an edge list.
type dag struct {
	succ, pred [][]int32
}

func newDAG(n int, edges ...[2]int) *dag {
	d := &dag{succ: make([][]int32, n), pred: make([][]int32, n)}
	for _, e := range edges {
		d.succ[e[0]] = append(d.succ[e[0]], int32(e[1]))
		d.pred[e[1]] = append(d.pred[e[1]], int32(e[0]))
	}
	return d
}

func (d *dag) Len() int                     { return len(d.succ) }
func (d *dag) Successors(n int64) []int32   { return d.succ[n] }
func (d *dag) Predecessors(n int64) []int32 { return d.pred[n] }
func (d *dag) descendants(u int) map[int]bool {
	seen := map[int]bool{}
	stack := []int{u}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, v := range d.succ[x] {
			if !seen[int(v)] {
				seen[int(v)] = true
				stack = append(stack, int(v))
			}
		}
	}
	return seen
}

func randomDAG(rng *rand.Rand, n, edges int) *dag {
	var es [][2]int
	seen := map[[2]int]bool{}
	for range edges {
		a, b := rng.IntN(n), rng.IntN(n)
		if a == b {
			continue
		}
		if a > b {
			a, b = b, a
		}
		if !seen[[2]int{a, b}] {
			seen[[2]int{a, b}] = true
			es = append(es, [2]int{a, b})
		}
	}
	return newDAG(n, es...)
}

// observer records, with one logical clock, when each node started and ended, and the
// most node functions that executed at once.
type observer struct {
	clock      atomic.Int64
	start, end []atomic.Int64
	running    atomic.Int64
	maxRunning atomic.Int64
	calls      []atomic.Int32
}

func newObserver(n int) *observer {
	return &observer{start: make([]atomic.Int64, n), end: make([]atomic.Int64, n), calls: make([]atomic.Int32, n)}
}

func (o *observer) enter(id int64) {
	o.calls[id].Add(1)
	o.start[id].Store(o.clock.Add(1))
	r := o.running.Add(1)
	for {
		m := o.maxRunning.Load()
		if r <= m || o.maxRunning.CompareAndSwap(m, r) {
			break
		}
	}
}

func (o *observer) leave(id int64) {
	o.running.Add(-1)
	o.end[id].Store(o.clock.Add(1))
}

func TestRandomDAGs(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 1))
		n := 1 + rng.IntN(80)
		d := randomDAG(rng, n, rng.IntN(3*n))
		workers := 1 + rng.IntN(6)
		failing := map[int64]bool{}
		if seed%2 == 1 {
			for range 1 + rng.IntN(3) {
				failing[int64(rng.IntN(n))] = true
			}
		}
		o := newObserver(n)
		rep, err := Run(context.Background(), d, func(ctx context.Context, nd *Node) error {
			o.enter(nd.ID())
			defer o.leave(nd.ID())
			if nd.ID()%3 == 0 {
				runtime.Gosched()
			}
			if failing[nd.ID()] {
				return fmt.Errorf("node %d fails", nd.ID())
			}
			return nil
		}, Options{Workers: workers})
		require.NoError(t, err)
		require.LessOrEqual(t, o.maxRunning.Load(), int64(workers), "seed %d", seed)

		skippedBy := map[int]bool{}
		for f := range failing {
			for v := range d.descendants(int(f)) {
				skippedBy[v] = true
			}
		}
		for u := range n {
			res := rep.Result(int64(u))
			require.NotEmpty(t, res.Status, "seed %d node %d unreported", seed, u)
			switch {
			case skippedBy[u]:
				require.Equal(t, Skipped, res.Status, "seed %d node %d", seed, u)
				require.Zero(t, o.calls[u].Load(), "a skipped node never runs")
				require.True(t, failing[res.BlockedBy])
				require.Equal(t, res.BlockedBy, res.Chain[0])
				require.Equal(t, int64(u), res.Chain[len(res.Chain)-1])
				for i := 0; i+1 < len(res.Chain); i++ {
					require.Contains(t, d.succ[res.Chain[i]], int32(res.Chain[i+1]), "the chain follows edges")
				}
				require.ErrorIs(t, res.Err, ErrDependencyFailed)
			case failing[int64(u)]:
				require.Equal(t, Failed, res.Status)
				require.EqualValues(t, 1, o.calls[u].Load())
				require.EqualValues(t, -1, res.BlockedBy, "a node that ran was blocked by nothing")
			default:
				require.Equal(t, Succeeded, res.Status, "seed %d node %d: %v", seed, u, res.Err)
				require.EqualValues(t, 1, o.calls[u].Load(), "exactly once")
				for _, p := range d.pred[u] {
					require.Less(t, o.end[p].Load(), o.start[u].Load(), "seed %d: node %d started before predecessor %d ended", seed, u, p)
				}
			}
		}
		total := rep.Count(Succeeded) + rep.Count(Failed) + rep.Count(Skipped) + rep.Count(Cancelled)
		require.Equal(t, n, total)
	}
}

func TestCancellationAtRandomPoints(t *testing.T) {
	before := runtime.NumGoroutine()
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 2))
		n := 20 + rng.IntN(60)
		d := randomDAG(rng, n, 2*n)
		ctx, cancel := context.WithCancel(context.Background())
		cancelAt := int64(rng.IntN(n))
		var started atomic.Int64
		var cancelled atomic.Bool
		var events []Event // Started and Cancelled are emitted under one lock, in order
		rep, err := Run(ctx, d, func(ctx context.Context, nd *Node) error {
			if started.Add(1) == cancelAt {
				cancelled.Store(true)
				cancel()
				<-ctx.Done() // running nodes see the cancellation
				return ctx.Err()
			}
			return nil
		}, Options{Workers: 1 + rng.IntN(4), OnEvent: func(ev Event) { events = append(events, ev) }})
		cancel()
		if cancelled.Load() {
			require.ErrorIs(t, err, context.Canceled, "seed %d", seed)
			require.Positive(t, rep.Count(Cancelled)+rep.Count(Skipped)+rep.Count(Failed))
		}
		sawCancel := false
		for _, ev := range events {
			sawCancel = sawCancel || ev.Type == CancelledEvent
			require.False(t, sawCancel && ev.Type == Started, "seed %d: node %d started after cancellation", seed, ev.Node)
		}
		for u := range n {
			require.NotEmpty(t, rep.Result(int64(u)).Status, "seed %d node %d unreported", seed, u)
			if rep.Result(int64(u)).Status == Cancelled {
				require.ErrorIs(t, rep.Result(int64(u)).Err, context.Canceled)
			}
		}
	}
	// Polled here: testify's Eventually runs its condition on a goroutine of its own.
	for deadline := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if runtime.NumGoroutine() > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines outlive Run: %d before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
}

func TestAwaitGivesUpTheSlot(t *testing.T) {
	// One worker. Node 0 awaits node 1, which is independent and not started: if the
	// slot were not given up, node 1 could never run.
	d := newDAG(3, [2]int{1, 2})
	var order []int64
	var mu sync.Mutex
	record := func(s int64) { mu.Lock(); order = append(order, s); mu.Unlock() }
	rep, err := Run(context.Background(), d, func(ctx context.Context, n *Node) error {
		record(n.ID())
		if n.ID() == 0 {
			if err := n.Await(1); err != nil {
				return err
			}
			record(100)
		}
		return nil
	}, Options{Workers: 1, Priority: func(id int64) float64 { return float64(-id) }})
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Count(Succeeded))
	assert.Equal(t, int64(0), order[0])
	assert.Less(t, slices.Index(order, 1), slices.Index(order, 100), "the awaiting node resumes after what it awaited")
	assert.Positive(t, rep.Result(0).Waited)
}

// A worker that gave its slot back to a node resuming from Await serves the next node
// that awaits: a hundred awaits, one after the other, run on a few goroutines, not on a
// new one for each.
func TestAwaitReusesParkedWorkers(t *testing.T) {
	const pairs = 100
	d := newDAG(2 * pairs) // node 2i awaits node 2i+1
	goroutines := map[string]bool{}
	var mu sync.Mutex
	before := runtime.NumGoroutine()
	rep, err := Run(context.Background(), d, func(ctx context.Context, n *Node) error {
		buf := make([]byte, 64)
		id := strings.Fields(string(buf[:runtime.Stack(buf, false)]))[1] // "goroutine N [running]:"
		mu.Lock()
		goroutines[id] = true
		mu.Unlock()
		if n.ID()%2 == 0 {
			return n.Await(n.ID() + 1)
		}
		return nil
	}, Options{Workers: 1, Priority: func(id int64) float64 { return float64(-id) }})
	require.NoError(t, err)
	assert.Equal(t, 2*pairs, rep.Count(Succeeded))
	assert.Less(t, len(goroutines), pairs/4)
	for deadline := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before, "parked workers end with the run")
}

func TestAwaitRaisesPriority(t *testing.T) {
	// Node 0 awaits node 5, which waits behind node 4. Nodes 1..3 rank above 4 and 5,
	// but the awaited chain goes first once 0 waits.
	d := newDAG(6, [2]int{4, 5})
	var order []int64
	var mu sync.Mutex
	prio := []float64{100, 50, 50, 50, 1, 1}
	_, err := Run(context.Background(), d, func(ctx context.Context, n *Node) error {
		mu.Lock()
		order = append(order, n.ID())
		mu.Unlock()
		if n.ID() == 0 {
			return n.Await(5)
		}
		return nil
	}, Options{Workers: 1, Priority: func(id int64) float64 { return prio[id] }})
	require.NoError(t, err)
	assert.Equal(t, []int64{0, 4, 5, 1, 2, 3}, order)
}

func TestAwaitCycles(t *testing.T) {
	t.Run("awaiting a descendant", func(t *testing.T) {
		d := newDAG(2, [2]int{0, 1})
		rep, _ := Run(context.Background(), d, func(ctx context.Context, n *Node) error {
			if n.ID() == 0 {
				return n.Await(1)
			}
			return nil
		}, Options{Workers: 2})
		var ce *CycleError
		require.ErrorAs(t, rep.Result(0).Err, &ce)
		assert.Equal(t, int64(1), ce.Awaited)
		assert.Equal(t, Skipped, rep.Result(1).Status)
	})
	t.Run("awaiting each other", func(t *testing.T) {
		d := newDAG(2)
		ready := make(chan struct{})
		var once sync.Once
		var arrived atomic.Int32
		rep, err := Run(context.Background(), d, func(ctx context.Context, n *Node) error {
			if arrived.Add(1) == 2 {
				once.Do(func() { close(ready) })
			}
			<-ready // both running before either awaits
			return n.Await(1 - n.ID())
		}, Options{Workers: 2})
		require.NoError(t, err)
		// Whichever awaited second closed the cycle and failed; the first then sees its
		// awaited node fail.
		assert.Equal(t, 2, rep.Count(Failed))
		cycles := 0
		for _, r := range rep.All() {
			if errors.Is(r.Err, ErrCycle) {
				cycles++
			} else {
				assert.ErrorIs(t, r.Err, ErrDependencyFailed)
			}
		}
		assert.Equal(t, 1, cycles)
	})
	t.Run("awaiting itself", func(t *testing.T) {
		rep, _ := Run(context.Background(), newDAG(1), func(ctx context.Context, n *Node) error { return n.Await(0) }, Options{})
		assert.ErrorIs(t, rep.Result(0).Err, ErrCycle)
	})
}

func TestRandomAwaits(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 3))
		n := 5 + rng.IntN(40)
		d := randomDAG(rng, n, n)
		awaits := make([][]int64, n)
		for u := range n {
			if rng.IntN(3) == 0 {
				awaits[u] = []int64{int64(rng.IntN(n)), int64(rng.IntN(n))}
			}
		}
		o := newObserver(n)
		workers := 1 + rng.IntN(4)
		afterAwait := make([]atomic.Int64, n)
		rep, err := Run(context.Background(), d, func(ctx context.Context, nd *Node) error {
			o.enter(nd.ID())
			if a := awaits[nd.ID()]; a != nil {
				o.running.Add(-1) // not executing while it awaits
				err := nd.Await(a...)
				o.enter(nd.ID())
				o.calls[nd.ID()].Add(-1)
				afterAwait[nd.ID()].Store(o.clock.Add(1))
				if err != nil {
					o.leave(nd.ID())
					return err
				}
			}
			o.leave(nd.ID())
			return nil
		}, Options{Workers: workers})
		require.NoError(t, err)
		require.LessOrEqual(t, o.maxRunning.Load(), int64(workers), "seed %d", seed)
		for u := range n {
			res := rep.Result(int64(u))
			require.NotEmpty(t, res.Status, "seed %d node %d unreported", seed, u)
			if res.Status != Succeeded || awaits[u] == nil {
				continue
			}
			for _, a := range awaits[u] {
				require.Equal(t, Succeeded, rep.Result(int64(a)).Status, "seed %d: %d succeeded though awaited %d did not", seed, u, a)
				require.Less(t, o.end[a].Load(), afterAwait[u].Load(), "seed %d: %d resumed before awaited %d ended", seed, u, a)
			}
		}
	}
}

func TestPriorityOrder(t *testing.T) {
	// 0 -> 1 -> 2 is the longest chain; 3 and 4 are single nodes. One worker runs the
	// critical path first, ties to the lower ID.
	d := newDAG(5, [2]int{0, 1}, [2]int{1, 2})
	var order []int64
	_, err := Run(context.Background(), d, func(ctx context.Context, n *Node) error {
		order = append(order, n.ID())
		return nil
	}, Options{Workers: 1})
	require.NoError(t, err)
	assert.Equal(t, []int64{0, 1, 2, 3, 4}, order)

	order = nil
	weights := []float64{1, 1, 1, 1, 10}
	Run(context.Background(), d, func(ctx context.Context, n *Node) error {
		order = append(order, n.ID())
		return nil
	}, Options{Workers: 1, Weight: func(id int64) float64 { return weights[id] }})
	assert.Equal(t, []int64{4, 0, 1, 2, 3}, order)
}

// Ties orders the nodes of equal priority; a node released later still goes before the
// ready ones it ranks above.
func TestTiesOrder(t *testing.T) {
	// 0 -> 3; every priority equal. Ties: 0, 3, 1, 2, 4 (3 ranks above 1, 2 and 4 but
	// is ready only once 0 is done).
	d := newDAG(5, [2]int{0, 3})
	var order []int64
	_, err := Run(context.Background(), d, func(ctx context.Context, n *Node) error {
		order = append(order, n.ID())
		return nil
	}, Options{Workers: 1, Priority: func(int64) float64 { return 0 }, Ties: []int32{0, 3, 1, 2, 4}})
	require.NoError(t, err)
	assert.Equal(t, []int64{0, 3, 1, 2, 4}, order)

	for _, bad := range []struct {
		ties []int32
		want TiesError
	}{
		{[]int32{0, 1, 2}, TiesError{Len: 3, Nodes: 5}},
		{[]int32{0, 1, 2, 3, 5}, TiesError{Len: 5, Nodes: 5, Node: 5}},
		{[]int32{0, 1, 2, 1, 4}, TiesError{Len: 5, Nodes: 5, Node: 1, Twice: true}},
	} {
		ran := false
		rep, err := Run(context.Background(), d, func(context.Context, *Node) error { ran = true; return nil },
			Options{Workers: 1, Ties: bad.ties})
		var te *TiesError
		require.ErrorAs(t, err, &te, "%v", bad.ties)
		assert.Equal(t, bad.want, *te)
		assert.Nil(t, rep)
		assert.False(t, ran, "nothing runs with ties that are not a permutation")
	}
}

func TestPanicStopsTheRun(t *testing.T) {
	// 0 → 1; 2 and 3 are independent and start only after 0 (priority, one worker).
	d := newDAG(4, [2]int{0, 1})
	rep, err := Run(context.Background(), d, func(ctx context.Context, n *Node) error {
		if n.ID() == 0 {
			panic("boom")
		}
		return nil
	}, Options{Workers: 1, Priority: func(id int64) float64 { return float64(-id) }})
	var pe *PanicError
	require.ErrorAs(t, err, &pe, "a panic is a fault of the run")
	assert.Equal(t, "boom", pe.Value)
	assert.Contains(t, string(pe.Stack), "scheduler_test.go")
	assert.Regexp(t, `^panic: boom \(in github.com/restoregraph/restoregraph/scheduler.TestPanicStopsTheRun.func1 \(scheduler_test.go:\d+\)\)$`, pe.Error(),
		"what panicked and where, on one line")
	require.ErrorAs(t, rep.Result(0).Err, &pe)
	assert.Equal(t, Failed, rep.Result(0).Status)
	assert.Equal(t, Skipped, rep.Result(1).Status)
	assert.Equal(t, Cancelled, rep.Result(2).Status, "nothing new starts")
	assert.Equal(t, Cancelled, rep.Result(3).Status)
}

// A node function that recovers a panic itself fails its node alone.
func TestRecoveredPanicIsTheNodesFailure(t *testing.T) {
	d := newDAG(3, [2]int{0, 1})
	rep, err := Run(context.Background(), d, func(ctx context.Context, n *Node) (err error) {
		if n.ID() == 0 {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("contained: %w", Recovered(p))
				}
			}()
			var m map[string]int
			m["boom"]++
		}
		return nil
	}, Options{Workers: 2})
	require.NoError(t, err)
	var pe *PanicError
	require.ErrorAs(t, rep.Result(0).Err, &pe)
	assert.Regexp(t, `^contained: panic: assignment to entry in nil map \(in github.com/restoregraph/restoregraph/scheduler.TestRecoveredPanicIsTheNodesFailure.func1 \(scheduler_test.go:\d+\)\)$`,
		rep.Result(0).Err.Error())
	assert.Equal(t, Skipped, rep.Result(1).Status)
	assert.Equal(t, Succeeded, rep.Result(2).Status, "an independent branch goes on")
}

func TestFailFast(t *testing.T) {
	d := newDAG(10)
	rep, err := Run(context.Background(), d, func(ctx context.Context, n *Node) error {
		if n.ID() == 0 {
			return errors.New("first")
		}
		return nil
	}, Options{Workers: 1, FailFast: true, Priority: func(id int64) float64 { return float64(-id) }})
	require.ErrorContains(t, err, "stopped at the first failure: node 0: first", "the run's error is the failure that stopped it")
	assert.Equal(t, Failed, rep.Result(0).Status)
	assert.Equal(t, 9, rep.Count(Cancelled))
	assert.ErrorContains(t, rep.Result(5).Err, "first failure")
}

func TestStaticCycleIsSkipped(t *testing.T) {
	d := newDAG(4, [2]int{0, 1}, [2]int{1, 0}, [2]int{1, 2})
	rep, err := Run(context.Background(), d, func(ctx context.Context, n *Node) error { return nil }, Options{})
	require.NoError(t, err)
	for _, u := range []int{0, 1, 2} {
		assert.ErrorIs(t, rep.Result(int64(u)).Err, ErrCycle)
		assert.Equal(t, Skipped, rep.Result(int64(u)).Status)
	}
	assert.Equal(t, Succeeded, rep.Result(3).Status)
}

func TestEvents(t *testing.T) {
	d := newDAG(4, [2]int{0, 1}, [2]int{2, 3})
	var events []Event
	rep, err := Run(context.Background(), d, func(ctx context.Context, n *Node) error {
		if n.ID() == 2 {
			return errors.New("no")
		}
		if n.ID() == 1 {
			return n.Await(0) // already done: no waiting
		}
		return nil
	}, Options{Workers: 2, OnEvent: func(ev Event) {
		time.Sleep(time.Millisecond) // a slow consumer
		events = append(events, ev)
	}})
	require.NoError(t, err)
	require.Equal(t, 3, rep.Count(Succeeded)+rep.Count(Failed))
	byNode := map[int64][]EventType{}
	for _, ev := range events {
		byNode[ev.Node] = append(byNode[ev.Node], ev.Type)
		assert.False(t, ev.Time.IsZero())
	}
	assert.Equal(t, []EventType{Started, SucceededEvent}, byNode[0])
	assert.Equal(t, []EventType{Started, SucceededEvent}, byNode[1])
	assert.Equal(t, []EventType{Started, FailedEvent}, byNode[2])
	assert.Equal(t, []EventType{SkippedEvent}, byNode[3])
}
