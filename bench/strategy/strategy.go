package strategy

import (
	"context"
	"time"

	"github.com/restoregraph/restoregraph/internal/toposort"
	"github.com/restoregraph/restoregraph/scheduler"
	"golang.org/x/sync/errgroup"
)

// Result is one run of a strategy: its makespan, and when each node started and
// became usable (sleeps overshoot; the lower bound is computed from what was slept).
type Result struct {
	Makespan   time.Duration
	Start, End []time.Time
}

// Took returns how long each node took, from its start to when it was usable.
func (r Result) Took() []time.Duration {
	took := make([]time.Duration, len(r.Start))
	for i := range took {
		took[i] = r.End[i].Sub(r.Start[i])
	}
	return took
}

func newResult(n int) Result { return Result{Start: make([]time.Time, n), End: make([]time.Time, n)} }

// Strategy runs every node of w and returns when all are done.
type Strategy struct {
	Name    string
	Workers int // how many objects it restores at once
	Run     func(w *Workload, workers int) Result
}

// Strategies returns the strategies compared, with workers workers where the tool
// lets a user choose, kapp's 5 and Velero's one otherwise. poll is kapp's 3 s
// readiness poll, scaled like the latencies.
func Strategies(workers int, poll time.Duration) []Strategy {
	return []Strategy{
		{"restoregraph", workers, func(w *Workload, n int) Result { return graphRun(w, n, nil) }},
		{"restoregraph-fifo", workers, func(w *Workload, n int) Result {
			return graphRun(w, n, func(int64) float64 { return 0 })
		}},
		{"restoregraph-waits", workers, func(w *Workload, n int) Result { return graphRun(w, n, w.waitsAhead()) }},
		{"levels", workers, Levels},
		{"kapp", 5, func(w *Workload, n int) Result { return Batches(w, n, poll) }},
		{"velero", 1, func(w *Workload, _ int) Result { return OneAtATime(w) }},
	}
}

// sleep works one node and records when.
func sleep(w *Workload, r Result, u int) {
	r.Start[u] = time.Now()
	if d := w.cost(u); d > 0 {
		time.Sleep(d)
	}
	r.End[u] = time.Now()
}

// graphRun is restoregraph's scheduler: a node starts as soon as its predecessors are
// done, ready nodes by priority (nil: the longest remaining path weighted by latency;
// a constant: by ID, the backup's order, as a FIFO would take them; waitsAhead: the
// restore's own, the waits on the longest path ahead, then by ID).
func graphRun(w *Workload, workers int, prio func(int64) float64) Result {
	r := newResult(w.Len())
	start := time.Now()
	_, err := scheduler.Run(context.Background(), w, func(_ context.Context, n *scheduler.Node) error {
		sleep(w, r, int(n.ID()))
		return nil
	}, scheduler.Options{Workers: workers, Priority: prio,
		Weight: func(id int64) float64 { return float64(w.cost(int(id))) }})
	if err != nil {
		panic(err) // a background context is never cancelled
	}
	r.Makespan = time.Since(start)
	return r
}

// Levels runs the DAG level by level, as cli-utils' applier and Argo CD's sync waves
// do: every node of a level, workers at once, then a wait for the whole level.
func Levels(w *Workload, workers int) Result {
	r := newResult(w.Len())
	start := time.Now()
	for _, level := range w.levels() {
		var g errgroup.Group
		g.SetLimit(workers)
		for _, u := range level {
			g.Go(func() error { sleep(w, r, int(u)); return nil })
		}
		_ = g.Wait()
	}
	r.Makespan = time.Since(start)
	return r
}

// Batches is kapp's way: level by level, creates workers at a time, then readiness
// checked at once and, while something is not ready, again every poll.
func Batches(w *Workload, workers int, poll time.Duration) Result {
	r := newResult(w.Len())
	start := time.Now()
	for _, level := range w.levels() {
		var g errgroup.Group
		g.SetLimit(workers)
		for _, u := range level {
			g.Go(func() error {
				r.Start[u] = time.Now()
				if d := w.Latency[u].Create; d > 0 {
					time.Sleep(d)
				}
				r.End[u] = time.Now().Add(w.Latency[u].Ready)
				return nil
			})
		}
		_ = g.Wait()
		for {
			now, pending := time.Now(), false
			for _, u := range level {
				pending = pending || r.End[u].After(now)
			}
			if !pending {
				break
			}
			time.Sleep(poll)
		}
	}
	r.Makespan = time.Since(start)
	return r
}

// OneAtATime is Velero's restore: one object after the other, each waited for.
func OneAtATime(w *Workload) Result {
	r := newResult(w.Len())
	start := time.Now()
	for u := range w.Len() {
		sleep(w, r, u)
	}
	r.Makespan = time.Since(start)
	return r
}

// waitsAhead is the priority restore.Apply gives its scheduler: the number of nodes
// that wait to become ready (here, those with a readiness latency) on the longest path
// from each node, itself included; plain creates weigh nothing.
func (w *Workload) waitsAhead() func(int64) float64 {
	lr := toposort.LongestRemaining(w, toposort.Order(w), func(u int32) float64 {
		if w.Latency[u].Ready > 0 {
			return 1
		}
		return 0
	})
	return func(id int64) float64 { return lr[id] }
}
