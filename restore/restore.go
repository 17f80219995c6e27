package restore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/graph"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/plugin"
	"github.com/restoregraph/restoregraph/plugin/builtin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"github.com/restoregraph/restoregraph/readiness"
	"github.com/restoregraph/restoregraph/scheduler"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// run is the state of one restore.
type run struct {
	opts   RunOptions
	target Target
	backup Backup
	plan   *Plan
	sel    Selection // the plan's
	steps  []Step
	waiter *readiness.Waiter
	// claims waits for the claims the plan gates (Plan.claimGates) until they are Bound.
	claims *readiness.Waiter
	// healthy waits for the objects the plan makes their dependents wait for
	// (Plan.ready) until they are healthy.
	healthy *readiness.Waiter
	actions []*plugin.Action
	request *ria.Restore
	log     *slog.Logger
	// rawTaken: nothing the run asks for reads below an object's metadata, and its
	// creates take what is left undecoded (takesRaw); leavesUnread asks the rest of
	// each object.
	rawTaken bool

	journaled map[types.UID]Journaled // what an earlier run recorded
	// mu guards outcomes, by node: each is written by its node when it ends, and read
	// for owners' new UIDs (an owner ends before what it owns starts).
	mu       sync.Mutex
	outcomes []outcome

	labels runLabels // stepLabel's values

	bodies sync.Pool // of *[]byte, the buffers bodies are read into (bodyAppender)
	alarms sync.Pool // of *alarm, the item timeout's (budget)
	states sync.Pool // of *objectState (restoreNode)

	clientsMu sync.RWMutex
	clients   map[clientKey]dynamic.ResourceInterface // by resource and namespace (client)
}

// Apply restores the plan p into target: exactly its objects, at its versions, with its
// plugins. It first checks that the target still serves every version the plan chose
// (and refuses with a *PlanChangedError when it does not). The report says what
// happened to every object; the error is for what stopped the restore as a whole (a plan
// that no longer holds, admission, a cancelled ctx). A journal in opts is written to but
// not closed: its owner closes it.
func Apply(ctx context.Context, p *Plan, target Target, opts RunOptions) (*Report, error) {
	if err := p.recheck(ctx, target); err != nil {
		opts.withDefaults(p.source.Name).Logger.Warn("the plan no longer holds", "error", err)
		return nil, fmt.Errorf("restore: %w", err)
	}
	return apply(ctx, p, target, opts)
}

// apply restores p, which holds for target.
func apply(ctx context.Context, p *Plan, target Target, opts RunOptions) (*Report, error) {
	opts = opts.withDefaults(p.source.Name)
	started := opts.Clock.Now()
	log := opts.Logger.With("restore", opts.Name)
	r := newRun(p, target, opts)
	if opts.Admitter != nil {
		// An admission lost while the restore runs (another process may now write what
		// it writes) ends it, with the reason as the context's cause.
		var lost context.CancelCauseFunc
		ctx, lost = context.WithCancelCause(ctx)
		defer lost(nil)
		op := p.operation(opts.Name)
		op.OnWait, op.Lost = opts.OnAdmissionWait, lost
		// A run that follows a journal carries on the run of the same name that wrote it.
		op.Resumes = len(r.journaled) > 0
		release, err := opts.Admitter.Admit(ctx, op)
		if err != nil {
			return nil, fmt.Errorf("restore: admission: %w", err)
		}
		defer release()
	}
	log.Info("restore started", "backup", p.source.Name, "objects", p.Len(), "workers", opts.Workers)
	prio := p.graph.LongestRemaining(p.waitWeight())
	sopts := scheduler.Options{Workers: opts.Workers, Now: opts.Clock.Now,
		Priority: func(id int64) float64 { return prio[id] }, Ties: p.ties()}
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
	attrs := []any{"took", rep.Finished.Sub(rep.Started)}
	for _, s := range []Status{Restored, Adopted, Updated, Skipped, Failed, Cancelled} {
		if n := rep.Count(s); n > 0 {
			attrs = append(attrs, strings.ToLower(string(s)), n)
		}
	}
	if runErr != nil {
		attrs = append(attrs, "error", runErr)
	}
	log.Info("restore ended", attrs...)
	if pe := (*scheduler.PanicError)(nil); errors.As(runErr, &pe) {
		log.Error("a step panicked: the restore stopped", "where", pe.Where, "stack", string(pe.Stack))
	}
	return rep, runErr
}

// newRun readies what the steps of p's restore use.
func newRun(p *Plan, target Target, opts RunOptions) *run {
	r := &run{
		opts: opts, target: target, backup: p.backup, plan: p, sel: p.sel,
		waiter:   &readiness.Waiter{Client: target.Dynamic, Registry: p.ext.Readiness, Clock: opts.Clock},
		claims:   &readiness.Waiter{Client: target.Dynamic, Registry: claimsBound(), Clock: opts.Clock},
		healthy:  &readiness.Waiter{Client: target.Dynamic, Registry: readiness.NewHealth(), Clock: opts.Clock},
		request:  pluginRequest(opts, p.source.Name),
		outcomes: make([]outcome, p.graph.Len()),
		actions:  p.actions,
		log:      opts.Logger.With("restore", opts.Name),
	}
	r.labels = newRunLabels(p.source.Name, opts.Name)
	r.bodies.New = func() any { return new([]byte) }
	r.steps = r.defaultSteps()
	if p.ext.Steps != nil {
		r.steps = p.ext.Steps(r.steps)
	}
	r.rawTaken = r.takesRaw()
	if opts.Journal != nil {
		r.journaled = opts.Journal.Journaled()
	}
	return r
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
			if o.detail().err == nil { // a panic: the node recorded nothing
				o.more.err = sr.Err
			}
		case scheduler.Skipped:
			o.setStatus(Skipped)
			blocked := &BlockedError{Cycle: errors.Is(sr.Err, scheduler.ErrCycle), Err: sr.Err}
			for _, c := range sr.Chain {
				if cn := p.graph.NodeAt(c); cn.Item != nil {
					blocked.Chain = append(blocked.Chain, cn.Item.UID)
				}
			}
			if sr.BlockedBy >= 0 {
				if bn := p.graph.NodeAt(sr.BlockedBy); bn.Item != nil {
					blocked.By = bn.Item.UID
				}
			}
			o.detail().err, o.more.blockedBy = blocked, blocked.Chain
		case scheduler.Cancelled:
			o.setStatus(Cancelled)
			o.detail().err = sr.Err
		}
		rep.Summary[o.Status()]++
	}
	rep.outcomes, r.outcomes = r.outcomes, nil
	return rep
}

// nodeOf returns the node that restores the object id names, under whichever
// group-resource the backup recorded it.
func (r *run) nodeOf(id manifest.ID) (int64, bool) {
	it, ok := r.backup.Manifest().Get(id)
	if !ok {
		return 0, false
	}
	return r.plan.graph.NodeOf(it)
}

// newUID returns the UID in the target of the object whose UID in the backup is
// source: made by this run, or recorded in the journal by an earlier one.
func (r *run) newUID(source types.UID) (types.UID, bool) {
	if it, ok := r.backup.Manifest().ByUID(source); ok {
		if i, ok := r.plan.graph.NodeOf(it); ok {
			return r.uidOf(i, source)
		}
	}
	j, ok := r.journaled[source]
	return j.New, ok
}

// ownerUID is newUID of one of o's owners, source. The graph resolved o's owners when
// it was built, into edges from them: the owner is found among o's few predecessors,
// where newUID looks it up in the manifest, then its node in the graph. An object with
// many (an object may list thousands of owners) has each looked up as newUID does:
// scanning its predecessors for every owner would take their number squared.
func (r *run) ownerUID(o *Object, source types.UID) (types.UID, bool) {
	if o.node != nil {
		g := r.plan.graph
		if preds := g.Predecessors(o.node.ID()); len(preds) <= fewPredecessors {
			for _, p := range preds {
				if n := g.NodeAt(int64(p)); n.Item != nil && n.Item.UID == source {
					return r.uidOf(int64(p), source)
				}
			}
		}
	}
	return r.newUID(source)
}

// fewPredecessors is the most predecessors ownerUID scans for an owner.
const fewPredecessors = 8

// uidOf is newUID of node i, whose UID in the backup is source.
func (r *run) uidOf(i int64, source types.UID) (types.UID, bool) {
	r.mu.Lock()
	u := r.outcomes[i].NewUID()
	r.mu.Unlock()
	if u != "" {
		return u, true
	}
	j, ok := r.journaled[source]
	return j.New, ok
}

// restored journals that o was made (or found) in the target as uid; its outcome
// records it when o's steps end.
func (r *run) restored(o *Object, uid types.UID) error { return r.journal(o, uid) }

// journal records o as it stands, in the target as uid: how it was restored, its
// plugins' operations, whether its exec hooks ran. An object is recorded again as these
// change; the last record holds.
func (r *run) journal(o *Object, uid types.UID) error {
	if r.opts.Journal == nil {
		return nil
	}
	return r.opts.Journal.Record(o.Item.UID, Journaled{New: uid, Status: o.Result.Status, Operations: o.ops, HooksRan: o.hooksRan})
}

// failed logs that it failed with err, and returns err.
func (r *run) failed(ctx context.Context, it *manifest.Item, err error) error {
	r.log.WarnContext(ctx, "object failed", "object", it.String(), "uid", it.UID, "error", err)
	return err
}

// record keeps how the restore of node id, it, ended: res, and err when it failed.
func (r *run) record(ctx context.Context, id int64, it *manifest.Item, res *ObjectResult, err error) {
	if err != nil {
		res.Err = err
	}
	if r.log.Enabled(ctx, slog.LevelDebug) {
		r.log.DebugContext(ctx, "object ended", "object", it.String(), "status", res.Status, "retries", res.Retries)
	}
	o := outcomeOf(res)
	r.mu.Lock()
	r.outcomes[id] = o
	r.mu.Unlock()
}

// actions returns the built-in actions, then the caller's plugins, but those disabled;
// excluded is what the plan leaves out.
func actions(backup Backup, sel Selection, ext Extensions, excluded map[*manifest.Item]exclusion) ([]*plugin.Action, error) {
	var reg plugin.Registry
	m := backup.Manifest()
	// A PersistentVolume left out because its claim is provisioned again is not
	// there for the claim to bind to.
	inBackup := func(id manifest.ID) bool {
		it, ok := m.Get(id)
		return ok && excluded[it].by != Volumes
	}
	if err := builtin.Register(&reg, builtin.Options{PreserveNodePorts: sel.PreserveNodePorts, InBackup: inBackup}, sel.Disabled.Actions...); err != nil {
		return nil, err
	}
	out, err := reg.Actions()
	if err != nil || ext.Plugins == nil {
		return out, err
	}
	theirs, err := ext.Plugins.Actions()
	if err != nil {
		return nil, err
	}
	for _, a := range theirs {
		if !sel.Disabled.Action(a.Name) {
			out = append(out, a)
		}
	}
	return out, nil
}

// Run plans the restore of backup into target and applies the plan at once, as
// restoregraph restore does without --plan; the plan just made is not checked against
// the target again. A plan that cannot be made is an error and a nil report.
func Run(ctx context.Context, backup Backup, target Target, po PlanOptions, ro RunOptions) (*Report, error) {
	p, err := NewPlan(ctx, backup, target, po)
	if err != nil {
		return nil, err
	}
	return apply(ctx, p, target, ro)
}

// waitWeight weighs the plan's objects for the scheduler's priority: 1 for an object
// whose restore waits for it to become ready (a namespace, a CRD, a kind judged by its
// status), 0 for one ready once it exists, and for barriers. An object's priority is then
// the number of waits on the longest path still ahead of it, and equal priorities start
// namespace by namespace (ties). What holds others back for real time starts
// first; a chain of plain creates weighs nothing, for its creates take milliseconds
// against a restore's minutes, and putting every Deployment and ReplicaSet ahead of the
// rest (the chain's length as priority) makes kube-apiserver spend more on each core
// object created after them (docs/measured.md).
func (p *Plan) waitWeight() func(*graph.Node) float64 {
	// Nodes are weighed in runs of one kind: one lookup a run.
	var last schema.GroupKind
	weight := -1.0
	return func(n *graph.Node) float64 {
		if n.Item == nil {
			return 0
		}
		if gk := (schema.GroupKind{Group: n.Item.Group, Kind: n.Item.Kind}); gk != last || weight < 0 {
			last, weight = gk, 0
			if !p.ext.Readiness.JudgesByExistence(gk) {
				weight = 1
			}
		}
		return weight
	}
}

// ties orders the plan's objects where their priorities are equal: namespace by
// namespace, the cluster-scoped objects (and barriers) first, then the namespaces by
// name, each namespace's objects in the backup's order (by ID: group, version,
// resource, name). A namespace's objects are then made together, its Pods (which wait
// for their ReplicaSets) as soon as their ReplicaSets are, ahead of the next
// namespace's objects: a namespace is whole as soon as its own objects are made, where
// in the backup's order alone every namespace's core objects came first and the Pods of
// all of them last. Into the real server, the restore's pace is the same either way
// (docs/measured.md).
func (p *Plan) ties() []int32 {
	n := p.graph.Len()
	// Each node's namespace as an index into names; the items come sorted by group,
	// version and namespace, so a namespace is looked up once per run of items.
	ns := make([]int32, n)
	index, names := map[string]int32{"": 0}, []string{""}
	last, lastIdx := "", int32(0)
	for id := range n {
		name := ""
		if it := p.graph.NodeAt(int64(id)).Item; it != nil {
			name = it.Namespace
		}
		if name != last {
			k, ok := index[name]
			if !ok {
				k = int32(len(names))
				index[name] = k
				names = append(names, name)
			}
			last, lastIdx = name, k
		}
		ns[id] = lastIdx
	}
	// Each namespace's place by name ("" first), then a counting sort of the nodes.
	byName := make([]int32, len(names))
	for k := range byName {
		byName[k] = int32(k)
	}
	slices.SortFunc(byName, func(a, b int32) int { return strings.Compare(names[a], names[b]) })
	next := make([]int32, len(names)) // where each namespace's next node goes
	count := make([]int32, len(names))
	for _, k := range ns {
		count[k]++
	}
	var at int32
	for _, k := range byName {
		next[k], at = at, at+count[k]
	}
	ties := make([]int32, n)
	for id, k := range ns {
		ties[next[k]] = int32(id)
		next[k]++
	}
	return ties
}

// claimsBound is the registry of the claims a restore waits for: Bound is ready.
func claimsBound() *readiness.Registry {
	r := readiness.NewRegistry(readiness.ReadyOnCreate)
	r.Register(schema.GroupKind{Kind: "PersistentVolumeClaim"}, readiness.ClaimBound)
	return r
}

// pluginRequest is what plugins are told of the restore: opts.Request, with the
// restore's name and its backup's where it has none.
func pluginRequest(opts RunOptions, backup string) *ria.Restore {
	req := &ria.Restore{}
	if opts.Request != nil {
		*req = *opts.Request
	}
	if req.Name == "" {
		req.Name = opts.Name
	}
	if req.Backup == "" {
		req.Backup = backup
	}
	return req
}
