package restore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"github.com/restoregraph/restoregraph/readiness"
	"github.com/restoregraph/restoregraph/scheduler"
	"k8s.io/apimachinery/pkg/types"
)

// run is the state of one restore.
type run struct {
	opts    Options
	target  Target
	backup  Backup
	plan    *Plan
	steps   []Step
	waiter  *readiness.Waiter
	actions []*plugin.Action
	request *ria.Restore
	byID    map[manifest.ID]int64

	mu        sync.Mutex
	newUIDs   map[types.UID]types.UID // source UID -> UID in the target
	journaled map[types.UID]Journaled // what an earlier run recorded
	results   []ObjectResult          // by node ID; each written only by its node
}

// Run restores backup into target. The report says what happened to every object; the
// error is for what stopped the restore as a whole (planning in strict mode, a cancelled
// ctx). A journal in opts is written to but not closed: its owner closes it.
func Run(ctx context.Context, target Target, backup Backup, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	started := opts.Clock.Now()
	p, err := plan(ctx, backup, target.Discovery, opts)
	if err != nil {
		return nil, err
	}
	r := &run{
		opts: opts, target: target, backup: backup, plan: p,
		waiter:  &readiness.Waiter{Client: target.Dynamic, Registry: opts.Readiness, Clock: opts.Clock},
		request: &ria.Restore{Name: opts.Name},
		newUIDs: map[types.UID]types.UID{}, results: make([]ObjectResult, p.graph.Len()),
		byID: map[manifest.ID]int64{},
	}
	r.steps = r.defaultSteps()
	if opts.Steps != nil {
		r.steps = opts.Steps(r.steps)
	}
	for id := range int64(p.graph.Len()) {
		if n := p.graph.NodeAt(id); n.Item != nil {
			r.byID[n.Item.ID()] = id
		}
	}
	if opts.Plugins != nil {
		if r.actions, err = opts.Plugins.Actions(); err != nil {
			return nil, err
		}
	}
	if opts.Journal != nil {
		r.journaled = opts.Journal.Journaled()
		for src, j := range r.journaled {
			r.newUIDs[src] = j.New
		}
	}
	// The plan's longest remaining paths are the scheduler's priorities, so that the
	// critical path the plan shows is the one run first.
	prio := p.graph.LongestRemaining(nil)
	sopts := scheduler.Options{Workers: opts.Workers, Now: opts.Clock.Now,
		Priority: func(id int64) float64 { return prio[id] }}
	if opts.OnEvent != nil {
		sopts.OnEvent = func(ev scheduler.Event) { opts.OnEvent(newEvent(ev, p.graph.NodeAt(ev.Node).Item)) }
	}
	srep, runErr := scheduler.Run(ctx, p.graph, r.restoreNode, sopts)
	return r.report(srep, started, p), runErr
}

// report merges the scheduler's results with what each node recorded.
func (r *run) report(srep *scheduler.Report, started time.Time, p *Plan) *Report {
	rep := &Report{Summary: map[Status]int{}, Warnings: p.Warnings, Started: started, Finished: r.opts.Clock.Now()}
	for id, sr := range srep.Results {
		n := p.graph.NodeAt(int64(id))
		if n.Item == nil {
			continue
		}
		it := n.Item
		res := r.results[id]
		res.ObjectRef = refOf(it, versionOf(p.versions, it))
		if res.Started.IsZero() {
			res.Started = sr.Start
		}
		res.Ended = sr.End
		switch sr.Status {
		case scheduler.Succeeded:
			if res.Status == "" {
				res.Status = Restored
			}
		case scheduler.Failed:
			res.Status, res.Reason = Failed, sr.Err.Error()
		case scheduler.Skipped:
			res.Status, res.Reason = Skipped, sr.Err.Error()
			for _, c := range sr.Chain {
				if cn := p.graph.NodeAt(c); cn.Item != nil {
					res.BlockedBy = append(res.BlockedBy, cn.Item.UID)
				}
			}
			if errors.Is(sr.Err, scheduler.ErrCycle) {
				res.Reason = "on or behind a dependency cycle"
			}
		case scheduler.Cancelled:
			res.Status, res.Reason = Cancelled, sr.Err.Error()
		}
		rep.Summary[res.Status]++
		rep.Objects = append(rep.Objects, res)
	}
	return rep
}

func (r *run) newUID(source types.UID) (types.UID, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u, ok := r.newUIDs[source]
	return u, ok
}

func (r *run) restored(source, target types.UID, status Status) error {
	r.mu.Lock()
	r.newUIDs[source] = target
	r.mu.Unlock()
	if r.opts.Journal != nil {
		return r.opts.Journal.Record(source, target, status)
	}
	return nil
}
