package restore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"github.com/restoregraph/restoregraph/hook"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	riav2 "github.com/restoregraph/restoregraph/plugin/restoreitemaction/v2"
	"github.com/restoregraph/restoregraph/scheduler"
)

// The default steps, one method each, in pipeline order.

func (r *run) stepJournal(ctx context.Context, o *Object) error {
	j, ok := r.journaled[o.Item.UID]
	if !ok {
		return nil
	}
	var existing *unstructured.Unstructured
	err := r.retry(ctx, o, func() (err error) {
		existing, err = o.Client.Get(ctx, o.Name, metav1.GetOptions{})
		return err
	})
	if err == nil && existing.GetUID() == j.New {
		res := o.Result
		res.NewUID, res.Status, res.FromJournal, res.Created = j.New, j.Status, true, r.opts.Clock.Now()
		o.Target = existing
		// The pipeline's own next step, wrapped or replaced as the caller made it: the
		// operations an earlier run started are followed, not started again.
		o.ops, o.hooksRan = slices.Clone(j.Operations), j.HooksRan
		res.Operations = slices.Clone(j.Operations)
		switch {
		case slices.ContainsFunc(o.ops, func(op Operation) bool { return op.Phase == OperationInProgress }):
			o.SkipTo(StepOperations)
		case o.Item.GroupResource() == podsResource && !o.hooksRan && len(r.plan.volumes.filled[o.Item]) > 0:
			o.SkipTo(StepPodVolumes) // what an earlier run started filling is followed
		case o.Item.GroupResource() == podsResource && !o.hooksRan:
			o.SkipTo(StepExecHooks) // none when it has no hooks
		default:
			o.SkipTo(StepReady)
		}
		if r.managedFieldsDue(ctx, o) {
			o.SkipTo(StepManagedFields) // the steps after it follow, as above
		}
		return nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil // recorded but gone since: restore it again
}

func (r *run) stepRead(_ context.Context, o *Object) error {
	it := o.Item
	var body []byte
	var buf *[]byte // the buffer body was read into, to be used again
	var err error
	if ba, ok := r.backup.(bodyAppender); ok {
		buf = r.bodies.Get().(*[]byte)
		body, err = ba.AppendBody((*buf)[:0], it.GroupResource(), o.Resource.Version, it.Namespace, it.Name)
		if err == nil {
			*buf = body
		}
	} else {
		body, err = r.backup.Body(it.GroupResource(), o.Resource.Version, it.Namespace, it.Name)
	}
	// A tree decoded whole holds none of the body's bytes; one left unread holds its
	// values' JSON in the body itself, whose buffer then goes back with its maps
	// (release).
	defer func() {
		if buf != nil && o.body != buf {
			r.bodies.Put(buf)
		}
	}()
	if err != nil {
		return err
	}
	reads := r.readsBackup(o)
	unread := !reads && r.leavesUnread(o)
	if o.Backup, o.decoded, err = decodeBackup(body, unread); err != nil {
		return fmt.Errorf("%s at %s in the backup: %w", it, o.Resource.Version, err)
	}
	if unread {
		o.body = buf
	}
	askStatus := !reads && annotation(o.Backup, RestoreStatusAnnotation) != ""
	if unread && (askStatus || it.GroupResource() == podsResource && hook.Annotated(o.Backup)) {
		// Its metadata asks for its status, as the manifest's item did not say, or a
		// Pod's for a hook, which reads its spec: decoded again, whole. The tree left
		// unread, which holds the body's bytes, is the collector's.
		o.decoded.Drop()
		o.body = nil
		if o.Backup, o.decoded, err = decodeBackup(body, false); err != nil {
			return fmt.Errorf("%s at %s in the backup: %w", it, o.Resource.Version, err)
		}
	}
	// The status is read from the backup's object.
	reads = reads || askStatus
	if r.plan.ext.Steps != nil {
		o.Body = o.Backup.DeepCopy() // a caller's steps may change anything
		return nil
	}
	if !reads {
		// No step after this one reads the backup's object once the body has changed:
		// the body is that object, changed where it is. Copying its top level and
		// metadata was a tenth of what a restore allocated, for the objects of kinds
		// no action applies to.
		o.Body = o.Backup
		return nil
	}
	// The default steps change the top level and metadata of most objects, and what lies
	// deeper only on the way through an action, a modifier, a hook or a mapping of it,
	// which take their own copy first (Object.own): a deep copy of every object was a
	// quarter of what a restore allocated.
	top := o.decoded.Map(len(o.Backup.Object))
	maps.Copy(top, o.Backup.Object)
	o.Body, o.shared = &unstructured.Unstructured{Object: top}, true
	if md, ok := top["metadata"]; ok {
		top["metadata"] = o.decoded.Copy(md)
	}
	return nil
}

// leavesUnread reports, of an object whose backup's object no step reads once its body
// has changed (readsBackup), whether no step reads below its top level and metadata
// either, but an action that reads the JSON (plugin.RawTaker: the built-in Pod action),
// and its create encodes the rest as it is (rawTaken): then each object of its top
// level but metadata (a Deployment's spec, a ConfigMap's data, a Pod's spec) is kept as
// its JSON, not decoded, and its status, which the restore drops, is left out
// (jsontree.ObjectMapsUnread). Decoding them was most of what reading an object cost,
// for objects a restore changes only in their metadata.
// A Pod whose annotations ask for a hook, which reads its spec, is decoded whole once
// stepRead has read them.
func (r *run) leavesUnread(o *Object) bool {
	it := o.Item
	switch {
	case !r.rawTaken:
		return false
	case hasAnnotation(it, RestoreStatusAnnotation):
		return false // its status may be written from the backup's
	case r.plan.volumes.snapshot[it] != nil:
		return false // its volume is set in its spec (StepVolume)
	case r.plan.volumes.adopters[it.UID]:
		return false // a Job's selector may be set in its spec (keepJobSelector)
	case !r.plan.ext.Readiness.JudgesByExistence(it.GroupVersionKind().GroupKind()):
		return false // its readiness is judged from the object created
	}
	return true
}

// takesRaw reports whether nothing the run asks for reads below an object's top level
// and metadata, and whether its creates take the JSON left undecoded: the package's own
// encoders (createBody's path through restDynamic), or a server in this process
// (direct.Creator).
// A caller's client may read or copy what it is given. Only a caller's step changes an
// object's client.
func (r *run) takesRaw() bool {
	switch {
	case r.plan.ext.Steps != nil:
		return false // a caller's step may read anything
	case r.sel.Modifiers != nil, r.sel.Hooks != nil, len(r.sel.NamespaceMappings) > 0, r.sel.Existing == Update:
		return false // each may read or change what lies deeper
	}
	if r.target.creator != nil {
		return true
	}
	_, ok := r.target.Dynamic.(*restDynamic)
	return ok
}

// readsBackup reports whether a step after StepRead may read o.Backup, the backup's
// object, once o.Body has changed, as far as o's item says: an action applies to o (it
// is given the item from the backup), the status of its resource is restored, from the
// backup's object, or o is read to be verified. The item's labels choose actions as
// they do in stepActions. The backup's object may ask for its status too
// (RestoreStatusAnnotation), which stepRead sees once it is decoded.
func (r *run) readsBackup(o *Object) bool {
	it := o.Item
	if o.DryRun || r.plan.status.selects(it.GroupResource()) {
		return true
	}
	for _, a := range r.actions {
		// An action that takes values left as their JSON reads only the backup's
		// metadata. It may be given the backup's object itself, whose metadata the
		// steps before it change: where the run leaves values undecoded (rawTaken),
		// they change no name or namespace.
		if a.AppliesTo(it.GroupResource(), it.Namespace, &it.Labels) && !(a.TakesRaw && r.rawTaken) {
			return true
		}
	}
	return false
}

// own gives o.Body its own copy of what it still shares with o.Backup below its top
// level and metadata, before a step changes any of it.
func (o *Object) own() {
	if !o.shared {
		return
	}
	for k, v := range o.Body.Object {
		if k != "metadata" {
			o.Body.Object[k] = o.decoded.Copy(v) // shared is set with decoded
		}
	}
	o.shared = false
}

// serverSetMetadata is what the API server sets and a restored object must not carry.
var serverSetMetadata = []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
	"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"}

func (r *run) stepSanitize(_ context.Context, o *Object) error {
	if md, ok := o.Body.Object["metadata"].(map[string]any); ok {
		o.managedFields, _ = md["managedFields"].([]any) // for StepManagedFields
		for _, f := range serverSetMetadata {
			delete(md, f)
		}
	}
	if !r.plan.status.keeps(o) {
		delete(o.Body.Object, "status")
	}
	return nil
}

func (r *run) stepActions(ctx context.Context, o *Object) error {
	it := o.Item
	// A pointer to the labels is a labels.Labels without a copy of their slice's header
	// boxed for each action asked.
	for _, a := range r.actions {
		if !a.AppliesTo(it.GroupResource(), it.Namespace, &it.Labels) {
			continue
		}
		if !a.SharesItem {
			o.own()
		}
		o.held = o.held || !a.ForgetsItems
		// The call is charged to the object's time (a plugin that hangs fails its object),
		// what the plugin then asks to wait for is bounded by the plugin's own timeout.
		var out *ria.ExecuteOutput
		err := o.budget.run(ctx, func(ctx context.Context) error {
			return contained(func() (err error) {
				in := &ria.ExecuteInput{Item: o.Body, ItemFromBackup: o.Backup, Restore: r.request}
				if a.ExecuteMaking != nil {
					// The maps it makes are given back with the object's (release).
					out, err = a.ExecuteMaking(in, o.decoded)
				} else {
					out, err = riav2.Execute(ctx, a.RestoreItemAction, in)
				}
				return err
			})
		})
		if err != nil {
			return &PluginError{Plugin: a.Name, Err: err}
		}
		if out.SkipRestore {
			res := o.Result
			res.Status, res.SkippedBy, res.Reason = Skipped, a.Name, "plugin "+a.Name+" asked to skip it"
			o.Finish()
			return nil
		}
		if out.UpdatedItem != nil {
			o.Body = out.UpdatedItem
			if name := o.Body.GetName(); name != o.Name && name != "" {
				// Velero's CSI actions name what they restore anew (after the restore's
				// UID): the object is made, found and waited for under its new name.
				o.Name, o.Result.TargetName = name, name
			}
		}
		if out.OperationID != "" {
			if err := r.started(ctx, o, a, out.OperationID); err != nil {
				return err
			}
		}
		if err := r.additionalItems(ctx, o, a, out); err != nil {
			return err
		}
	}
	if ann, ok := o.Body.Object["metadata"].(map[string]any)["annotations"].(map[string]any); ok {
		if _, set := ann[MustIncludeAnnotation]; set {
			ann, _ = ownMetadataMap(o.Body, o.decoded, "annotations")
			delete(ann, MustIncludeAnnotation) // Velero's actions' note to the restore, not the object's
		}
	}
	return nil
}

// stepModify applies the resource modifiers that match the object. Conditions name it
// as the backup does (its namespace before any mapping), as Velero judges them.
func (r *run) stepModify(_ context.Context, o *Object) error {
	if r.sel.Modifiers == nil {
		return nil
	}
	o.own()
	it := o.Item
	var labels, annotations map[string]string
	if o.DryRun {
		labels, annotations = o.Body.GetLabels(), o.Body.GetAnnotations()
	}
	applied, err := r.sel.Modifiers.Apply(o.Body, it.GroupResource(), it.Namespace, it.Name)
	o.Result.Modifiers = applied
	if o.DryRun && len(applied) > 0 {
		// Verify compares spec and the rest but not metadata, which the target's
		// controllers change; what the modifiers set there is compared too.
		o.modifiedMeta = append(changedKeys("labels", labels, o.Body.GetLabels()), changedKeys("annotations", annotations, o.Body.GetAnnotations())...)
	}
	return err
}

// metaChange is a label or annotation that a modifier set (want) or removed (!set).
type metaChange struct {
	field, key, want string
	set              bool
}

// changedKeys lists what differs from before to after in field.
func changedKeys(field string, before, after map[string]string) []metaChange {
	var out []metaChange
	for k, v := range after {
		if old, ok := before[k]; !ok || old != v {
			out = append(out, metaChange{field: field, key: k, want: v, set: true})
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, metaChange{field: field, key: k})
		}
	}
	return out
}

// additionalItems restores first what a plugin asked for, then waits when it asks.
func (r *run) additionalItems(ctx context.Context, o *Object, a *plugin.Action, out *ria.ExecuteOutput) error {
	if len(out.AdditionalItems) == 0 || o.DryRun {
		return nil
	}
	res := o.Result
	var ids []int64
	for _, ai := range out.AdditionalItems {
		id := manifest.ID{Group: ai.Group, Resource: ai.Resource, Namespace: ai.Namespace, Name: ai.Name}
		node, ok := r.nodeOf(id)
		switch {
		case ok && r.plan.excluded[r.plan.graph.NodeAt(node).Item].by != "":
			ex := r.plan.excluded[r.plan.graph.NodeAt(node).Item]
			res.Warnings = append(res.Warnings, fmt.Sprintf("plugin %s asked for %s, which is not restored: %s", a.Name, ai, ex.reason))
		case ok:
			ids = append(ids, node)
		default:
			res.Warnings = append(res.Warnings, fmt.Sprintf("plugin %s asked for %s, which is not in the backup", a.Name, ai))
		}
	}
	start := r.opts.Clock.Now()
	defer func() { res.Waited += r.opts.Clock.Since(start) }()
	if len(ids) > 0 {
		if err := o.node.Await(ids...); err != nil {
			var ae *scheduler.AwaitError
			if errors.As(err, &ae) {
				if it := r.plan.item(ae.Node); it != nil {
					err = fmt.Errorf("%w: %s %s", scheduler.ErrDependencyFailed, it, ae.Status)
				}
			}
			return &PluginError{Plugin: a.Name, Err: fmt.Errorf("additional items: %w", err)}
		}
	}
	if !out.WaitForAdditionalItems {
		return nil
	}
	recorded, fail := r.opts.AdditionalItems.Wait(ctx, a.Name, a.RestoreItemAction, out.AdditionalItems, r.request, out.AdditionalItemsReadyTimeout)
	if fail != nil {
		return fail // a *readiness.AdditionalItemsError, which names the plugin
	}
	if recorded != nil {
		res.Warnings = append(res.Warnings, recorded.Error())
	}
	return nil
}

func (r *run) stepRemapOwners(ctx context.Context, o *Object) error {
	if _, detached := r.plan.volumes.filled[o.Item]; detached {
		setOwnerReferences(o.Body, o.decoded, nil) // its owners adopt it (podVolumesFirst)
		return nil
	}
	r.remapOwners(ctx, o)
	return r.keepJobSelector(o)
}

func (r *run) stepCreate(ctx context.Context, o *Object) error {
	setAnnotation(o.Body, o.decoded, SourceUIDAnnotation, string(o.Item.UID))

	created, err := r.create(ctx, o)
	if err != nil {
		return err
	}
	o.Target = created
	o.Result.NewUID, o.Result.Created = created.GetUID(), r.opts.Clock.Now()
	return r.restored(o, created.GetUID())
}

// namespaceThere reports whether err, the refusal of the create of Namespace o, hides
// that the namespace exists: whoever may not create namespaces (a namespace's admin) may
// still read their own, which the restore then handles as one that exists.
func (r *run) namespaceThere(ctx context.Context, o *Object, err error) bool {
	if !apierrors.IsForbidden(err) || !isNamespace(o.Item) {
		return false
	}
	_, gerr := o.Client.Get(ctx, o.Name, metav1.GetOptions{})
	return gerr == nil
}

// create creates o.Body, handling AlreadyExists by the Existing policy, and a Namespace
// the user restoring may not create but may read as one that exists.
func (r *run) create(ctx context.Context, o *Object) (*unstructured.Unstructured, error) {
	res, it := o.Result, o.Item
	created, err := r.createBody(ctx, o)
	if err == nil {
		res.Status = Restored
		return created, nil
	}
	if !apierrors.IsAlreadyExists(err) && !r.namespaceThere(ctx, o, err) {
		return nil, bindingRefused(it, o.Body, err)
	}
	var existing *unstructured.Unstructured
	if err := r.retry(ctx, o, func() (err error) {
		existing, err = o.Client.Get(ctx, o.Name, metav1.GetOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	if existing.GetAnnotations()[SourceUIDAnnotation] == string(it.UID) {
		res.Status = Restored // created by an earlier attempt of this restore
		return existing, nil
	}
	policy := r.sel.Existing
	if namespaceDefault(it) && !r.sel.Disabled.Rule(NamespaceDefaults) {
		policy = Adopt
	}
	switch policy {
	case Adopt:
		res.Status = Adopted
		return existing, nil
	case Update:
		var updated *unstructured.Unstructured
		err := r.retry(ctx, o, func() error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cur, err := o.Client.Get(ctx, o.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				o.own()
				o.Body.SetResourceVersion(cur.GetResourceVersion())
				keepGenerated(it.GroupResource(), o.Body, cur)
				updated, err = o.Client.Update(ctx, o.Body, metav1.UpdateOptions{})
				return err
			})
		})
		if apierrors.IsInvalid(err) {
			// What the target will not change in place (a Pod's spec beyond its images,
			// a field its validation holds) stays as it is, labelled with this backup and
			// restore, as Velero's restore leaves it, with the refusal as a warning.
			kept, lerr := r.labelExisting(ctx, o)
			if lerr != nil {
				return nil, lerr
			}
			res.Status = Adopted
			res.Warnings = append(res.Warnings, "not updated, left as it is: the target refuses the backup's version: "+err.Error())
			return kept, nil
		}
		if err != nil {
			return nil, err
		}
		res.Status = Updated
		return updated, nil
	}
	return nil, fmt.Errorf("%s already exists in the target (policy %s): %w", it, policy, err)
}

// labelExisting gives the object in the target the labels stepLabel gave o.Body (the
// backup's and the restore's names) and changes nothing else of it.
func (r *run) labelExisting(ctx context.Context, o *Object) (*unstructured.Unstructured, error) {
	want := o.Body.GetLabels()
	var kept *unstructured.Unstructured
	err := r.retry(ctx, o, func() error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := o.Client.Get(ctx, o.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			labels, changed := cur.GetLabels(), false
			for _, k := range []string{BackupNameLabel, RestoreNameLabel} {
				if v, ok := want[k]; ok && labels[k] != v {
					if labels == nil {
						labels = map[string]string{}
					}
					labels[k], changed = v, true
				}
			}
			if !changed {
				kept = cur
				return nil
			}
			cur.SetLabels(labels)
			kept, err = o.Client.Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
	})
	return kept, err
}

func (r *run) stepStatus(ctx context.Context, o *Object) error {
	status, has := o.Backup.Object["status"]
	if !has || !r.plan.status.keeps(o) || o.Result.Status != Restored {
		return nil
	}
	withStatus := o.Target.DeepCopy()
	withStatus.Object["status"] = status
	err := r.retry(ctx, o, func() error {
		updated, err := o.Client.UpdateStatus(ctx, withStatus, metav1.UpdateOptions{})
		if err == nil {
			o.Target = updated
		}
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) { // NotFound: the kind has no status subresource
		o.Result.Warnings = append(o.Result.Warnings, "status not restored: "+err.Error())
	}
	return nil
}

// stepReady returns once the object is ready: at once when the object in the target
// says so, otherwise through the waiter, within the item's deadline.
func (r *run) stepReady(ctx context.Context, o *Object) error {
	if r.plan.gates[o.Item].wait {
		// What mounts the claim starts once it is Bound: a Pod on a claim not yet bound
		// would wait in Pending for it anyway, and its data may be restored first.
		if res, err := r.claims.Wait(ctx, o.Resource, o.Target.GetNamespace(), o.Target.GetName(), o.budget.remaining()); err != nil {
			reason := res.Reason
			if why := r.unboundWhy(ctx, o); why != "" {
				reason += "; " + why
			}
			return fmt.Errorf("not Bound (%s): %w", reason, err)
		}
	} else if g, ok := r.plan.ready[o.Item]; ok {
		// What this object serves (a webhook, an APIService, objects a user's order puts
		// after it) starts once it is healthy.
		if res, err := r.healthy.Wait(ctx, o.Resource, o.Target.GetNamespace(), o.Target.GetName(), o.budget.remaining()); err != nil {
			return fmt.Errorf("not %s (%s); %s: %w", g.until, res.Reason, g.why, err)
		}
	} else if rr := r.plan.ext.Readiness.Check(o.Target); !rr.Ready {
		if _, err := r.waiter.Wait(ctx, o.Resource, o.Target.GetNamespace(), o.Target.GetName(), o.budget.remaining()); err != nil {
			return err
		}
	}
	o.Result.Ready = r.opts.Clock.Now()
	return nil
}

// settling reports whether the target's API server says it is not ready yet (its
// /readyz), or does not answer: a server that has just started may refuse what its
// authorizer has not read yet. A target reached otherwise than through NewTarget's
// client cannot tell, and is never settling.
func (r *run) settling(ctx context.Context) bool {
	rd, ok := r.target.Dynamic.(*restDynamic)
	if !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return rd.rest.Get().AbsPath("/readyz").Do(ctx).Error() != nil
}

// retry is the package's retry of transient errors, counted in the object's result.
func (r *run) retry(ctx context.Context, o *Object, f func() error) error {
	return retryTransient(ctx, r.opts.Retry, &o.Result.Retries, r.settling, f)
}

// hasAnnotation reports whether the manifest's item has the annotation key.
func hasAnnotation(it *manifest.Item, key string) bool {
	_, ok := it.Annotations.Lookup(key)
	return ok
}
