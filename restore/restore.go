package restore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/plugin"
	"github.com/restoregraph/restoregraph/plugin/builtin"
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

	journaled map[types.UID]Journaled // what an earlier run recorded
	// mu guards outcomes, by node: each is written by its node when it ends, and read
	// for owners' new UIDs (an owner ends before what it owns starts).
	mu       sync.Mutex
	outcomes []outcome
}

// Run restores backup into target. The report says what happened to every object; the
// error is for what stopped the restore as a whole (planning in strict mode, a cancelled
// ctx). A journal in opts is written to but not closed: its owner closes it.
func Run(ctx context.Context, target Target, backup Backup, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	started := opts.Clock.Now()
	r, err := newRun(ctx, target, backup, opts)
	if err != nil {
		return nil, err
	}
	p := r.plan
	if opts.Admitter != nil {
		// An admission lost while the restore runs (another process may now write what
		// it writes) ends it, with the reason as the context's cause.
		var lost context.CancelCauseFunc
		ctx, lost = context.WithCancelCause(ctx)
		defer lost(nil)
		op := p.operation(opts.Name, opts.Existing)
		op.OnWait, op.Lost = opts.OnAdmissionWait, lost
		release, err := opts.Admitter.Admit(ctx, op)
		if err != nil {
			return nil, fmt.Errorf("restore: admission: %w", err)
		}
		defer release()
	}
	// The plan's longest remaining paths are the scheduler's priorities, so that the
	// critical path the plan shows is the one run first.
	prio := p.graph.LongestRemaining(nil)
	sopts := scheduler.Options{Workers: opts.Workers, Now: opts.Clock.Now,
		Priority: func(id int64) float64 { return prio[id] }}
	if opts.OnEvent != nil {
		sopts.OnEvent = func(ev scheduler.Event) { opts.OnEvent(newEvent(ev, p.item(ev.Node))) }
	}
	srep, runErr := scheduler.Run(ctx, p.graph, r.restoreNode, sopts)
	if cause := context.Cause(ctx); errors.Is(cause, admission.ErrLost) {
		runErr = fmt.Errorf("restore: %w", cause)
	}
	rep := r.report(srep, started, p)
	if opts.HealthTimeout > 0 && runErr == nil {
		rep.Health = r.waitHealthy(ctx, rep)
		rep.Finished = opts.Clock.Now()
	}
	return rep, runErr
}

// newRun plans the restore and readies what its steps use. opts has its defaults.
func newRun(ctx context.Context, target Target, backup Backup, opts Options) (*run, error) {
	p, err := plan(ctx, backup, target.Discovery, opts)
	if err != nil {
		return nil, err
	}
	r := &run{
		opts: opts, target: target, backup: backup, plan: p,
		waiter:   &readiness.Waiter{Client: target.Dynamic, Registry: opts.Readiness, Clock: opts.Clock},
		request:  &ria.Restore{Name: opts.Name, Backup: opts.BackupName},
		outcomes: make([]outcome, p.graph.Len()),
	}
	r.steps = r.defaultSteps()
	if opts.Steps != nil {
		r.steps = opts.Steps(r.steps)
	}
	r.actions = p.actions
	if opts.Journal != nil {
		r.journaled = opts.Journal.Journaled()
	}
	return r, nil
}

// report merges the scheduler's results into what each node recorded, and lets the
// scheduler's go: the report keeps the outcomes and the plan.
func (r *run) report(srep *scheduler.Report, started time.Time, p *Plan) *Report {
	rep := &Report{Summary: map[Status]int{}, Warnings: p.Warnings, Started: started, Finished: r.opts.Clock.Now(), plan: p}
	for id, sr := range srep.All() {
		if p.item(id) == nil {
			continue
		}
		o := &r.outcomes[id]
		if o.started == 0 {
			o.started = unixNano(sr.Start)
		}
		o.ended = unixNano(sr.End)
		switch sr.Status {
		case scheduler.Succeeded:
			if o.Status() == "" {
				o.setStatus(Restored)
			}
		case scheduler.Failed:
			o.setStatus(Failed)
			o.detail().reason = sr.Err.Error()
		case scheduler.Skipped:
			o.setStatus(Skipped)
			o.detail().reason = sr.Err.Error()
			for _, c := range sr.Chain {
				if cn := p.graph.NodeAt(c); cn.Item != nil {
					o.more.blockedBy = append(o.more.blockedBy, cn.Item.UID)
				}
			}
			if errors.Is(sr.Err, scheduler.ErrCycle) {
				o.more.reason = "on or behind a dependency cycle"
			}
		case scheduler.Cancelled:
			o.setStatus(Cancelled)
			o.detail().reason = sr.Err.Error()
		}
		rep.Summary[o.Status()]++
	}
	rep.outcomes, r.outcomes = r.outcomes, nil
	return rep
}

// nodeOf returns the node that restores the object id names, under whichever
// group-resource the backup recorded it: the graph's node i is the manifest's item i.
func (r *run) nodeOf(id manifest.ID) (int64, bool) {
	m := r.backup.Manifest()
	it, ok := m.Get(id)
	if !ok {
		return 0, false
	}
	i, ok := m.Index(it)
	return int64(i), ok
}

// newUID returns the UID in the target of the object whose UID in the backup is
// source: made by this run, or recorded in the journal by an earlier one.
func (r *run) newUID(source types.UID) (types.UID, bool) {
	if it, ok := r.backup.Manifest().ByUID(source); ok {
		if i, ok := r.backup.Manifest().Index(it); ok {
			r.mu.Lock()
			u := r.outcomes[i].NewUID()
			r.mu.Unlock()
			if u != "" {
				return u, true
			}
		}
	}
	j, ok := r.journaled[source]
	return j.New, ok
}

// restored journals that o was made (or found) in the target as uid; its outcome
// records it when o's steps end.
func (r *run) restored(o *Object, uid types.UID) error {
	if r.opts.Journal != nil {
		return r.opts.Journal.Record(o.Item.UID, uid, o.Result.Status)
	}
	return nil
}

// record keeps how o's restore ended.
func (r *run) record(id int64, res *ObjectResult) {
	o := outcomeOf(res)
	r.mu.Lock()
	r.outcomes[id] = o
	r.mu.Unlock()
}

// actions returns the built-in actions, then the caller's plugins, but those disabled.
func actions(backup Backup, opts Options) ([]*plugin.Action, error) {
	var reg plugin.Registry
	m := backup.Manifest()
	inBackup := func(id manifest.ID) bool { _, ok := m.Get(id); return ok }
	if err := builtin.Register(&reg, builtin.Options{PreserveNodePorts: opts.PreserveNodePorts, InBackup: inBackup}, opts.DisablePlugins...); err != nil {
		return nil, err
	}
	out, err := reg.Actions()
	if err != nil || opts.Plugins == nil {
		return out, err
	}
	theirs, err := opts.Plugins.Actions()
	if err != nil {
		return nil, err
	}
	for _, a := range theirs {
		if !disabled(opts, a.Name) {
			out = append(out, a)
		}
	}
	return out, nil
}
