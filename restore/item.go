package restore

import (
	"context"
	"fmt"
	"time"

	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"github.com/restoregraph/restoregraph/scheduler"
	"github.com/restoregraph/restoregraph/versionselect"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// restoreNode restores one object: the scheduler's function.
func (r *run) restoreNode(ctx context.Context, n *scheduler.Node) error {
	node := r.plan.graph.NodeAt(n.ID())
	if node.Item == nil {
		return nil // a barrier
	}
	it := node.Item
	res := &r.results[n.ID()]
	res.Started = time.Now()
	ctx, cancel := context.WithTimeout(ctx, r.opts.ItemTimeout)
	defer cancel()

	choice, _ := r.plan.versions.For(it.GroupResource())
	if choice.Rule == versionselect.RuleNotServed {
		return fmt.Errorf("%s", choice.Explain())
	}
	res.Version = choice.Version
	gvr := schema.GroupVersionResource{Group: it.Group, Version: choice.Version, Resource: it.Resource}
	client := r.dyn.Resource(gvr).Namespace(it.Namespace)

	if j, ok := r.journaled[it.UID]; ok {
		var existing *unstructured.Unstructured
		err := retry(ctx, r.opts.Retry, &res.Retries, func() (err error) {
			existing, err = client.Get(ctx, it.Name, metav1.GetOptions{})
			return err
		})
		if err == nil && existing.GetUID() == j.New {
			res.NewUID, res.Status, res.FromJournal, res.Created = j.New, j.Status, true, time.Now()
			return r.awaitReady(ctx, client, gvr, existing, res)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		// Recorded but gone since: restore it again.
	}

	body, err := r.backup.Body(it.GroupResource(), choice.Version, it.Namespace, it.Name)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(body); err != nil {
		return fmt.Errorf("%s at %s in the backup: %w", it, choice.Version, err)
	}
	fromBackup := obj.DeepCopy()
	status, hasStatus := obj.Object["status"]
	sanitize(obj, r.opts.KeepStatus[it.GroupResource()])

	for _, a := range r.actions {
		if !a.AppliesTo(it.GroupResource(), it.Namespace, it.Labels) {
			continue
		}
		out, err := a.Execute(&ria.ExecuteInput{Item: obj, ItemFromBackup: fromBackup, Restore: r.request})
		if err != nil {
			return fmt.Errorf("plugin %s: %w", a.Name, err)
		}
		if out.SkipRestore {
			res.Status, res.SkippedBy, res.Reason = Skipped, a.Name, "plugin "+a.Name+" asked to skip it"
			return nil
		}
		if out.UpdatedItem != nil {
			obj = out.UpdatedItem
		}
		if err := r.additionalItems(ctx, n, a, out, res); err != nil {
			return err
		}
	}

	r.remapOwners(ctx, obj, res)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[SourceUIDAnnotation] = string(it.UID)
	obj.SetAnnotations(ann)

	created, err := r.create(ctx, client, obj, it, res)
	if err != nil {
		return err
	}
	res.NewUID, res.Created = created.GetUID(), time.Now()
	if err := r.restored(it.UID, created.GetUID(), res.Status); err != nil {
		return err
	}
	if hasStatus && r.opts.KeepStatus[it.GroupResource()] && res.Status == Restored {
		created.Object["status"] = status
		err := retry(ctx, r.opts.Retry, &res.Retries, func() (err error) {
			var updated *unstructured.Unstructured
			if updated, err = client.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err == nil {
				created = updated
			}
			return err
		})
		if err != nil && !apierrors.IsNotFound(err) { // NotFound: the kind has no status subresource
			res.Warnings = append(res.Warnings, "status not restored: "+err.Error())
		}
	}
	return r.awaitReady(ctx, client, gvr, created, res)
}

// sanitize removes what the server sets, and status unless keepStatus.
func sanitize(obj *unstructured.Unstructured, keepStatus bool) {
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
		"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	if !keepStatus {
		delete(obj.Object, "status")
	}
}

// additionalItems restores first what a plugin asked for, then waits when it asks.
func (r *run) additionalItems(ctx context.Context, n *scheduler.Node, a *plugin.Action, out *ria.ExecuteOutput, res *ObjectResult) error {
	name := a.Name
	if len(out.AdditionalItems) == 0 {
		return nil
	}
	var ids []int64
	for _, ai := range out.AdditionalItems {
		id := manifest.ID{Group: ai.Group, Resource: ai.Resource, Namespace: ai.Namespace, Name: ai.Name}
		if node, ok := r.byID[id]; ok {
			ids = append(ids, node)
		} else {
			res.Warnings = append(res.Warnings, fmt.Sprintf("plugin %s asked for %s, which is not in the backup", name, ai))
		}
	}
	start := time.Now()
	defer func() { res.Waited += time.Since(start) }()
	if len(ids) > 0 {
		if err := n.Await(ids...); err != nil {
			return fmt.Errorf("plugin %s: additional items: %w", name, err)
		}
	}
	if !out.WaitForAdditionalItems {
		return nil
	}
	recorded, fail := r.opts.AdditionalItems.Wait(ctx, name, a.RestoreItemAction, out.AdditionalItems, r.request, out.AdditionalItemsReadyTimeout)
	if fail != nil {
		return fail
	}
	if recorded != nil {
		res.Warnings = append(res.Warnings, recorded.Error())
	}
	return nil
}

// create creates obj, handling AlreadyExists by the Existing policy.
func (r *run) create(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured, it *manifest.Item, res *ObjectResult) (*unstructured.Unstructured, error) {
	var created *unstructured.Unstructured
	err := retry(ctx, r.opts.Retry, &res.Retries, func() (err error) {
		created, err = client.Create(ctx, obj, metav1.CreateOptions{})
		return err
	})
	if err == nil {
		res.Status = Restored
		return created, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	var existing *unstructured.Unstructured
	if err := retry(ctx, r.opts.Retry, &res.Retries, func() (err error) {
		existing, err = client.Get(ctx, obj.GetName(), metav1.GetOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	if existing.GetAnnotations()[SourceUIDAnnotation] == string(it.UID) {
		res.Status = Restored // created by an earlier attempt of this restore
		return existing, nil
	}
	switch r.opts.Existing {
	case Adopt:
		res.Status = Adopted
		return existing, nil
	case Update:
		var updated *unstructured.Unstructured
		err := retry(ctx, r.opts.Retry, &res.Retries, func() error {
			cur, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			obj.SetResourceVersion(cur.GetResourceVersion())
			updated, err = client.Update(ctx, obj, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				return apierrors.NewServerTimeout(it.GroupResource(), "update", 0) // retry with a fresh version
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		res.Status = Updated
		return updated, nil
	}
	return nil, fmt.Errorf("%s already exists in the target (policy %s)", it, r.opts.Existing)
}

// awaitReady returns once the object is ready: at once when the created object says
// so, otherwise through the waiter, within the item's deadline.
func (r *run) awaitReady(ctx context.Context, client dynamic.ResourceInterface, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, res *ObjectResult) error {
	if rr := r.opts.Readiness.Check(obj); rr.Ready {
		res.Ready = time.Now()
		return nil
	}
	var timeout time.Duration
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if _, err := r.waiter.Wait(ctx, gvr, obj.GetNamespace(), obj.GetName(), timeout); err != nil {
		return err
	}
	res.Ready = time.Now()
	return nil
}
