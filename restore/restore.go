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
	r, err := newRun(ctx, target, backup, opts)
	if err != nil {
		return nil, err
	}
	p := r.plan
	if opts.Admitter != nil {
		release, err := admit(ctx, opts, p.operation(opts.Name, opts.Existing))
		if err != nil {
			return nil, err
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
		waiter:  &readiness.Waiter{Client: target.Dynamic, Registry: opts.Readiness, Clock: opts.Clock},
		request: &ria.Restore{Name: opts.Name, Backup: opts.BackupName},
		newUIDs: map[types.UID]types.UID{}, results: make([]ObjectResult, p.graph.Len()),
	}
	r.steps = r.defaultSteps()
	if opts.Steps != nil {
		r.steps = opts.Steps(r.steps)
	}
	r.actions = p.actions
	if opts.Journal != nil {
		r.journaled = opts.Journal.Journaled()
		for src, j := range r.journaled {
			r.newUIDs[src] = j.New
		}
	}
	return r, nil
}

// report merges the scheduler's results with what each node recorded. The report's
// objects are the run's results, compacted in place (barriers have none): a million
// objects' results are not held twice.
func (r *run) report(srep *scheduler.Report, started time.Time, p *Plan) *Report {
	rep := &Report{Summary: map[Status]int{}, Warnings: p.Warnings, Started: started, Finished: r.opts.Clock.Now()}
	objects := r.results[:0]
	for id, sr := range srep.Results {
		it := p.item(int64(id))
		if it == nil {
			continue
		}
		res := r.results[id]
		res.ObjectRef = refOf(it, versionOf(p.versions, it), r.opts.NamespaceMappings)
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
		objects = append(objects, res)
	}
	rep.Objects, r.results = objects, nil
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

// admit waits until the restore may run: at once when nothing earlier conflicts with
// it, else after telling OnAdmissionWait whom it waits for.
func admit(ctx context.Context, opts Options, op admission.Operation) (func(), error) {
	release, conflicts, err := opts.Admitter.TryAdmit(ctx, op)
	if err != nil {
		return nil, fmt.Errorf("restore: admission: %w", err)
	}
	if release != nil {
		return release, nil
	}
	if opts.OnAdmissionWait != nil {
		opts.OnAdmissionWait(conflicts)
	}
	release, err = opts.Admitter.Admit(ctx, op)
	if err != nil {
		return nil, fmt.Errorf("restore: admission: %w", err)
	}
	return release, nil
}
