package restore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"github.com/restoregraph/restoregraph/readiness"
	"github.com/restoregraph/restoregraph/scheduler"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// run is the state of one restore.
type run struct {
	opts    Options
	backup  Backup
	plan    *Plan
	dyn     dynamic.Interface
	mapper  meta.RESTMapper
	waiter  *readiness.Waiter
	actions []*plugin.Action
	request *ria.Restore
	journal *Journal
	byID    map[manifest.ID]int64

	mu        sync.Mutex
	newUIDs   map[types.UID]types.UID // source UID -> UID in the target
	journaled map[types.UID]Journaled // what an earlier run recorded
	results   []ObjectResult          // by node ID; each written only by its node
}

// Run restores backup into the cluster of cfg. The report says what happened to every
// object; the error is for what stopped the restore as a whole (planning in strict
// mode, an unreadable journal, a cancelled ctx).
func Run(ctx context.Context, cfg *rest.Config, backup Backup, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	started := time.Now()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	p, err := plan(ctx, backup, disc, opts)
	if err != nil {
		return nil, err
	}
	r := &run{
		opts: opts, backup: backup, plan: p, dyn: dyn,
		mapper:  restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		waiter:  &readiness.Waiter{Client: dyn, Registry: opts.Readiness},
		request: &ria.Restore{Name: opts.Name},
		newUIDs: map[types.UID]types.UID{}, results: make([]ObjectResult, p.graph.Len()),
		byID: map[manifest.ID]int64{},
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
	if opts.Journal != "" {
		if r.journal, r.journaled, err = OpenJournal(opts.Journal); err != nil {
			return nil, err
		}
		for src, j := range r.journaled {
			r.newUIDs[src] = j.New
		}
	}
	var onEvent func(scheduler.Event)
	if opts.OnEvent != nil {
		onEvent = func(ev scheduler.Event) {
			opts.OnEvent(Event{Event: ev, Item: p.graph.NodeAt(ev.Node).Item})
		}
	}
	srep, runErr := scheduler.Run(ctx, p.graph, r.restoreNode, scheduler.Options{Workers: opts.Workers, OnEvent: onEvent})
	if r.journal != nil {
		if err := r.journal.Close(); err != nil && runErr == nil {
			runErr = fmt.Errorf("restore journal: %w", err)
		}
	}
	return r.report(srep, started, p), runErr
}

// report merges the scheduler's results with what each node recorded.
func (r *run) report(srep *scheduler.Report, started time.Time, p *Plan) *Report {
	rep := &Report{Summary: map[Status]int{}, Warnings: p.Warnings, Started: started, Finished: time.Now()}
	for id, sr := range srep.Results {
		n := p.graph.NodeAt(int64(id))
		if n.Item == nil {
			continue
		}
		it := n.Item
		res := r.results[id]
		res.UID, res.Group, res.Resource, res.Kind, res.Namespace, res.Name = it.UID, it.Group, it.Resource, it.Kind, it.Namespace, it.Name
		if res.Version == "" {
			res.Version = versionOf(p.versions, it)
		}
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
	if r.journal != nil {
		return r.journal.Record(source, target, status)
	}
	return nil
}
