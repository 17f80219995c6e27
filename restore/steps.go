package restore

import (
	"context"
	"fmt"

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
	Name string
	Run  func(ctx context.Context, o *Object) error
}

// The default steps, in the order they run.
const (
	// StepJournal finds an object that an earlier run of this restore recorded in the
	// journal, and finishes it once it is ready instead of making it again.
	StepJournal = "journal"
	// StepRead decodes the object's body at the version chosen for its group-resource.
	StepRead = "read"
	// StepSanitize removes what the server sets, and status unless it is kept.
	StepSanitize = "sanitize"
	// StepActions runs the RestoreItemActions that apply: their changes, additional
	// items (restored first, then waited for when asked) and requests to skip.
	StepActions = "actions"
	// StepRemapOwners points ownerReferences at owners that exist in the target.
	StepRemapOwners = "remap-owners"
	// StepCreate creates the object, handling one that exists by the Existing policy,
	// and records it in the journal.
	StepCreate = "create"
	// StepStatus restores status for the group-resources in Options.KeepStatus.
	StepStatus = "status"
	// StepReady waits until the object is ready, so that its dependents may start.
	StepReady = "ready"
)

// DefaultStepNames lists the default pipeline's steps in order.
var DefaultStepNames = []string{StepJournal, StepRead, StepSanitize, StepActions, StepRemapOwners, StepCreate, StepStatus, StepReady}

// Object is one object on its way through the pipeline: what the steps read and change.
type Object struct {
	// Item is the object as the manifest records it.
	Item *manifest.Item
	// Resource is where it is restored: its group and resource at the chosen version.
	Resource schema.GroupVersionResource
	// Client reaches Resource in the object's namespace in the target.
	Client dynamic.ResourceInterface
	// Backup is the object as the backup holds it at that version, set by StepRead.
	// Steps must not change it.
	Backup *unstructured.Unstructured
	// Body is what will be created; steps change it.
	Body *unstructured.Unstructured
	// Target is the object as it is in the target, once created, adopted or found.
	Target *unstructured.Unstructured
	// Result is the object's line of the report.
	Result *ObjectResult

	node     *scheduler.Node
	finished bool
}

// Finish ends the object's pipeline after the current step: the steps after it do not
// run, and the object counts as done (its Result says how).
func (o *Object) Finish() { o.finished = true }

// defaultSteps returns the pipeline of r, in DefaultStepNames order.
func (r *run) defaultSteps() []Step {
	return []Step{
		{StepJournal, r.stepJournal},
		{StepRead, r.stepRead},
		{StepSanitize, r.stepSanitize},
		{StepActions, r.stepActions},
		{StepRemapOwners, r.stepRemapOwners},
		{StepCreate, r.stepCreate},
		{StepStatus, r.stepStatus},
		{StepReady, r.stepReady},
	}
}

// restoreNode restores one object through the pipeline: the scheduler's function.
func (r *run) restoreNode(ctx context.Context, n *scheduler.Node) error {
	it := r.plan.item(n.ID())
	if it == nil {
		return nil // a barrier
	}
	res := &r.results[n.ID()]
	res.Started = r.opts.Clock.Now()
	if ex, ok := r.plan.excluded[r.plan.graph.NodeAt(n.ID()).Item]; ok {
		res.Status, res.SkippedBy, res.Reason = Skipped, ex.by, ex.reason
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.ItemTimeout)
	defer cancel()

	choice, _ := r.plan.versions.For(it.GroupResource())
	if choice.Rule == versionselect.RuleNotServed {
		return fmt.Errorf("%s", choice.Explain())
	}
	gvr := schema.GroupVersionResource{Group: it.Group, Version: choice.Version, Resource: it.Resource}
	o := &Object{Item: it, Resource: gvr, Client: r.target.Dynamic.Resource(gvr).Namespace(it.Namespace), Result: res, node: n}
	for _, s := range r.steps {
		if err := s.Run(ctx, o); err != nil {
			return err
		}
		if o.finished {
			break
		}
	}
	return nil
}
