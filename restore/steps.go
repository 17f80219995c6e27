package restore

import (
	"context"
	"fmt"

	"github.com/restoregraph/restoregraph/internal/jsontree"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/scheduler"
	"github.com/restoregraph/restoregraph/versionselect"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Step is one named stage of an object's restore. Every object passes through the
// steps in order; a step that returns an error fails the object (and so skips its
// dependents), and a step that calls Object.Finish ends its pipeline early.
type Step struct {
	Name StepName
	Run  func(ctx context.Context, o *Object) error
	// Unbounded steps bound their own waits and are not charged to the object's item
	// timeout (StepActions: a plugin's wait for its additional items has the plugin's
	// own timeout).
	Unbounded bool
}

// StepName names a step of the pipeline: one of the default steps' below, or a caller's
// own.
type StepName string

// The default steps, in the order they run.
const (
	// StepJournal finds an object that an earlier run of this restore recorded in the
	// journal, and finishes it once it is ready instead of making it again (giving it
	// the managed fields its backup recorded, if that run stopped before it had).
	StepJournal StepName = "journal"
	// StepRead decodes the object's body at the version chosen for its group-resource.
	StepRead StepName = "read"
	// StepSanitize removes what the server sets, and status unless it is kept.
	StepSanitize StepName = "sanitize"
	// StepMapNamespaces moves the object into the namespace Selection.NamespaceMappings
	// names: its own namespace, a Namespace's name, role binding subjects, a volume's
	// claim.
	StepMapNamespaces StepName = "map-namespaces"
	// StepVolume makes a volume of the native snapshot of a PersistentVolume whose data
	// comes back so (VolumeNativeSnapshot), through its location's VolumeSnapshotter,
	// and points the PersistentVolume at it.
	StepVolume StepName = "volume"
	// StepActions runs the RestoreItemActions that apply: their changes, additional
	// items (restored first, then waited for when asked) and requests to skip.
	StepActions StepName = "actions"
	// StepModify applies the resource modifiers of Selection.Modifiers that match the
	// object, after the actions, as Velero applies them.
	StepModify StepName = "modify"
	// StepRemapOwners points ownerReferences at owners that exist in the target.
	StepRemapOwners StepName = "remap-owners"
	// StepLabel labels the object with the backup's and the restore's names
	// (velero.io/backup-name, velero.io/restore-name), as Velero does, so that one
	// label selector finds what a restore made.
	StepLabel StepName = "labels"
	// StepCreate creates the object, handling one that exists by the Existing policy,
	// and records it in the journal.
	StepCreate StepName = "create"
	// StepStatus restores status as Selection.RestoreStatus and the object's
	// velero.io/restore-status annotation say.
	StepStatus StepName = "status"
	// StepManagedFields gives an object the restore created the managed fields its
	// backup recorded (a patch after the create, as Velero does), owner references'
	// entries at their owners' new UIDs, so that the fields stay their managers'.
	StepManagedFields StepName = "managed-fields"
	// StepOperations waits until the asynchronous operations plugins started on the
	// object (riav2.AsyncAction) have completed, cancelling one that outlasts
	// RunOptions.ItemOperationTimeout.
	StepOperations StepName = "operations"
	// StepPodVolumes fills the volumes of a Pod the restore created whose files the
	// backup holds (Extensions.PodVolumes), within RunOptions.ItemOperationTimeout.
	StepPodVolumes StepName = "pod-volumes"
	// StepInitHooks puts the init containers of a Pod's restore hooks (Selection.Hooks,
	// or its init.hook.restore.velero.io annotations) before its own.
	StepInitHooks StepName = "init-hooks"
	// StepExecHooks runs a restored Pod's exec hooks (Selection.Hooks, or its
	// post.hook.restore.velero.io annotations) once their containers are up, through
	// Target.Exec; its dependents wait for them.
	StepExecHooks StepName = "exec-hooks"
	// StepReady waits until the object is ready, so that its dependents may start.
	StepReady StepName = "ready"
)

// DefaultStepNames lists the default pipeline's steps in order.
var DefaultStepNames = []StepName{StepJournal, StepRead, StepSanitize, StepMapNamespaces, StepVolume, StepActions, StepModify, StepInitHooks,
	StepRemapOwners, StepLabel, StepCreate, StepStatus, StepManagedFields, StepOperations, StepPodVolumes, StepExecHooks, StepReady}

// Object is one object on its way through the pipeline: what the steps read and change.
type Object struct {
	// Item is the object as the manifest records it.
	Item *manifest.Item
	// Resource is where it is restored: its group and resource at the chosen version.
	Resource schema.GroupVersionResource
	// Client reaches Resource in the object's namespace in the target, and Name is its
	// name there (a mapped Namespace's is not its name in the backup).
	Client dynamic.ResourceInterface
	Name   string
	// Backup is the object as the backup holds it at that version, set by StepRead.
	// Steps must not change it.
	Backup *unstructured.Unstructured
	// Body is what will be created; steps change it. With steps of a caller's, it is a
	// copy of Backup throughout. Under the default steps it shares what lies below its
	// top level and metadata with Backup until a default step changes that (it then
	// takes its own copy); and when no step after StepRead reads Backup (no action
	// applies to the object, its status is not restored), Body is Backup itself.
	Body *unstructured.Unstructured
	// Target is the object as it is in the target, once created, adopted or found. As
	// created through the Dynamic that NewTarget makes, it holds only the answer's
	// apiVersion, kind and metadata (without managedFields) unless the restore reads
	// more of it: its readiness is judged from its content, its status is restored, or
	// it is a Pod that may have exec hooks. As created through a server in this process (NewTarget of an embedded
	// server's configuration), it is
	// the whole object as the server stored it, which nobody may change.
	Target *unstructured.Unstructured
	// Result is the object's line of the report.
	Result *ObjectResult

	// DryRun: the pipeline runs for Verify, to learn what the restore makes of the
	// object, and must write nothing to the target. The steps before StepCreate run.
	DryRun bool

	made         dynamic.ResourceInterface // Client as object made it, for resource in namespace
	resource     schema.GroupVersionResource
	namespace    string
	node         *scheduler.Node
	budget       *budget
	modifiedMeta []metaChange   // set by StepModify for Verify
	ops          []Operation    // the plugins' asynchronous operations on it
	hooksRan     bool           // its exec hooks ran, in an earlier run
	shared       bool           // Body shares values below its top level and metadata with Backup (own)
	held         bool           // an action that may keep them was given Body and Backup
	decoded      *jsontree.Maps // the maps StepRead decoded Backup into, and those made for it since
	// body is the buffer of run.bodies that Backup's values left as JSON lie in, which
	// goes back with decoded's maps, or nil.
	body *[]byte
	// managedFields are the backup's, which StepSanitize takes off Body (and off Backup,
	// when Body is Backup), for StepManagedFields.
	managedFields []any
	finished      bool
	skipTo        StepName
}

// Finish ends the object's pipeline after the current step: the steps after it do not
// run, and the object counts as done (its Result says how).
func (o *Object) Finish() { o.finished = true }

// SkipTo passes over the steps after the current one up to the step named name, which
// runs next (StepJournal skips to StepReady: what an earlier run made is only waited
// for). Without such a step after the current one, the pipeline ends as with Finish.
func (o *Object) SkipTo(name StepName) { o.skipTo = name }

// defaultSteps returns the pipeline of r, in DefaultStepNames order.
func (r *run) defaultSteps() []Step {
	return []Step{
		{Name: StepJournal, Run: r.stepJournal},
		{Name: StepRead, Run: r.stepRead},
		{Name: StepSanitize, Run: r.stepSanitize},
		{Name: StepMapNamespaces, Run: r.stepMapNamespaces},
		{Name: StepVolume, Run: r.stepVolume},
		{Name: StepActions, Run: r.stepActions, Unbounded: true},
		{Name: StepModify, Run: r.stepModify},
		{Name: StepInitHooks, Run: r.stepInitHooks},
		{Name: StepRemapOwners, Run: r.stepRemapOwners},
		{Name: StepLabel, Run: r.stepLabel},
		{Name: StepCreate, Run: r.stepCreate},
		{Name: StepStatus, Run: r.stepStatus},
		{Name: StepManagedFields, Run: r.stepManagedFields},
		{Name: StepOperations, Run: r.stepOperations, Unbounded: true},
		{Name: StepPodVolumes, Run: r.stepPodVolumes, Unbounded: true},
		{Name: StepExecHooks, Run: r.stepExecHooks, Unbounded: true},
		{Name: StepReady, Run: r.stepReady},
	}
}

// restoreNode restores one object through the pipeline: the scheduler's function.
func (r *run) restoreNode(ctx context.Context, n *scheduler.Node) (err error) {
	it := r.plan.item(n.ID())
	if it == nil {
		return nil // a barrier
	}
	st := r.nodeState()
	res := &st.res
	res.Started = r.opts.Clock.Now()
	defer func() {
		st.budget.close()
		if err != nil {
			err = r.failed(ctx, it, err)
		}
		r.record(ctx, n.ID(), it, res, err)
		r.release(st, err == nil)
	}()
	if ex, ok := r.plan.excluded[r.plan.graph.NodeAt(n.ID()).Item]; ok {
		res.Status, res.SkippedBy, res.Reason = Skipped, ex.by, ex.reason
		return nil
	}
	o := &st.o
	if err := r.object(o, it, res, &st.budget); err != nil {
		return err
	}
	o.node = n
	err = r.runSteps(ctx, o, r.steps)
	if r.opts.inspect != nil {
		r.opts.inspect(o)
	}
	if err != nil {
		r.abandon(ctx, o, err)
		return err
	}
	return nil
}

// objectState is what restoreNode makes for an object: its pipeline's Object, its
// result and its budget, in one allocation. Made for each of a million objects they
// were 8% of what a restore allocated; the default steps keep none of them once the
// object is recorded, so that they are used again (run.states).
type objectState struct {
	o      Object
	res    ObjectResult
	budget budget
}

// nodeState returns an objectState, zero.
func (r *run) nodeState() *objectState {
	if st, ok := r.states.Get().(*objectState); ok {
		return st
	}
	return new(objectState)
}

// release gives st back to be used again, when nothing may still hold it: no step of
// the caller's ran, which may have kept the Object, and no inspection. The maps the
// backup's object was decoded into, which the body and the object as created share,
// then go back to the decoder (jsontree.Maps.Release), and the objects decoded after
// it are made of them, as is the next body read into the buffer its values left as
// JSON lie in (Object.body): when it was restored and no action that may keep them was
// given them. An object that failed may still be held by what stopped it (a plugin's call
// that outlived its budget), and a dry run's trees are Verify's. Using the maps again
// spares the collector most of what decoding would allocate.
func (r *run) release(st *objectState, restored bool) {
	if r.plan.ext.Steps != nil || r.opts.inspect != nil {
		return
	}
	if o := &st.o; o.decoded != nil {
		if restored && !o.held && !o.DryRun {
			o.decoded.Release()
			if o.body != nil {
				r.bodies.Put(o.body)
			}
		} else {
			o.decoded.Drop() // and the body's buffer, which the trees may hold, is the collector's
		}
	}
	*st = objectState{} // the pool holds no object's trees
	r.states.Put(st)
}

// object readies o for the pipeline of it, with res as its result and b as its budget;
// an error when its group-resource is not restorable.
func (r *run) object(o *Object, it *manifest.Item, res *ObjectResult, b *budget) error {
	choice, _ := r.plan.versions.For(it.GroupResource())
	if choice.Rule == versionselect.RuleNotServed {
		return fmt.Errorf("%w: %s", ErrNotServed, choice.Explain())
	}
	gvr := schema.GroupVersionResource{Group: it.Group, Version: choice.Version, Resource: it.Resource}
	ns, name := refOf(it, "", r.sel.NamespaceMappings).InTarget()
	client := r.client(gvr, ns)
	*b = budget{clock: r.opts.Clock, total: r.opts.ItemTimeout, alarms: &r.alarms}
	*o = Object{Item: it, Resource: gvr, Client: client, made: client, resource: gvr, namespace: ns, Name: name, Result: res,
		budget: b}
	return nil
}

// clientKey names a dynamic client: a resource at a version, in a namespace.
type clientKey struct {
	gvr       schema.GroupVersionResource
	namespace string
}

// client returns the dynamic client of gvr in namespace, made once for all the objects
// there: made for each object, two allocations each.
func (r *run) client(gvr schema.GroupVersionResource, namespace string) dynamic.ResourceInterface {
	k := clientKey{gvr, namespace}
	r.clientsMu.RLock()
	c, ok := r.clients[k]
	r.clientsMu.RUnlock()
	if ok {
		return c
	}
	c = r.target.Dynamic.Resource(gvr).Namespace(namespace)
	r.clientsMu.Lock()
	if r.clients == nil {
		r.clients = map[clientKey]dynamic.ResourceInterface{}
	}
	r.clients[k] = c
	r.clientsMu.Unlock()
	return c
}

// runSteps runs steps on o in order, until one fails or finishes o. Consecutive bounded
// steps share one run of o's budget. A step's error is returned as a *StepError, an
// admission webhook's refusal in it as a *WebhookError within.
func (r *run) runSteps(ctx context.Context, o *Object, steps []Step) error {
	for i := 0; i < len(steps) && !o.finished; {
		if o.skipTo != "" {
			if steps[i].Name != o.skipTo {
				i++
				continue
			}
			o.skipTo = ""
		}
		if steps[i].Unbounded {
			if err := steps[i].Run(ctx, o); err != nil {
				return &StepError{Step: steps[i].Name, Err: asWebhookError(err)}
			}
			i++
			continue
		}
		// Consecutive bounded steps, up to one that skips ahead, share one run of the
		// budget.
		j := i
		err := o.budget.run(ctx, func(ctx context.Context) error {
			for ; j < len(steps) && !steps[j].Unbounded; j++ {
				if err := steps[j].Run(ctx, o); err != nil {
					return &StepError{Step: steps[j].Name, Err: asWebhookError(err)}
				}
				if o.finished || o.skipTo != "" {
					j++
					return nil
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		i = j
	}
	if o.skipTo != "" {
		o.finished = true
	}
	return nil
}
