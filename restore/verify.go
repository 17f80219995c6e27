package restore

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/versionselect"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Verdict is what Verify found of one object.
type Verdict string

const (
	// Verified: in the target as the restore makes it, its owners live.
	Verified Verdict = "Verified"
	// Missing: not in the target.
	Missing Verdict = "Missing"
	// Differs: in the target, but its content is not what the restore makes of the
	// backup's, or an owner it names is not there.
	Differs Verdict = "Differs"
	// Replaced: not in the target, but its controller is, and is one of the workload
	// controllers that make what they own from a template (ReplicaSet, StatefulSet,
	// DaemonSet, Job, ReplicationController): it makes objects of its own in its place,
	// as it does when it sees fewer than it wants before the restored ones arrive. Not a
	// failure.
	Replaced Verdict = "Replaced"
)

// VerifiedObject is one object of the backup and what Verify found of it.
type VerifiedObject struct {
	ObjectRef
	Verdict Verdict `json:"verdict"`
	// Adopted: the object was in the target before, not made from the backup; only its
	// presence and its owners are checked.
	Adopted  bool     `json:"adopted,omitempty"`
	Problems []string `json:"problems,omitempty"`
}

// VerifyReport says whether a target holds what a restore of a backup should have made.
type VerifyReport struct {
	Objects []VerifiedObject `json:"objects"`
	Summary map[Verdict]int  `json:"summary"`
}

// OK reports whether every object was verified.
func (r *VerifyReport) OK() bool { return r.Summary[Missing] == 0 && r.Summary[Differs] == 0 }

// Verify checks that target holds what applying p should have made. Every object the
// plan restores must exist, found by its namespace and name in the target; every
// ownerReference must name a live object of that kind, name and UID; and an object the
// restore made (it carries SourceUIDAnnotation) must hold what the restore makes of the
// backup's body: the plan's pipeline (with the caller's steps) run on it up to
// StepCreate, as a dry run, every field of the result equal in the target. Fields the
// target adds (defaults, allocated IPs, generated selectors) and metadata and status are
// not compared. The report lists each object with its verdict and problems.
func Verify(ctx context.Context, p *Plan, target Target, opts RunOptions) (*VerifyReport, error) {
	opts = opts.withDefaults(p.source.Name)
	opts.Journal = nil // a dry run: nothing is recorded, nothing taken from an earlier run
	r := newRun(p, target, opts)
	create := slices.IndexFunc(r.steps, func(s Step) bool { return s.Name == StepCreate })
	if create < 0 {
		return nil, fmt.Errorf("verify: the pipeline has no step %q: what the restore makes is what the steps before it make", StepCreate)
	}
	r.steps = r.steps[:create]
	out := make([]*VerifiedObject, p.graph.Len())
	var g errgroup.Group
	g.SetLimit(opts.Workers)
	for id := range p.restored() {
		g.Go(func() error {
			v, err := r.verifyOne(ctx, id)
			out[id] = v
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	rep := &VerifyReport{Objects: []VerifiedObject{}, Summary: map[Verdict]int{}}
	for _, v := range out {
		if v != nil {
			rep.Objects = append(rep.Objects, *v)
			rep.Summary[v.Verdict]++
		}
	}
	return rep, nil
}

// verifyOne checks the object of node id. Its error is for what stops the verification
// as a whole: the context's.
func (r *run) verifyOne(ctx context.Context, id int64) (*VerifiedObject, error) {
	it := r.plan.item(id)
	choice, _ := r.plan.versions.For(it.GroupResource())
	v := &VerifiedObject{ObjectRef: refOf(it, choice.Version, r.sel.NamespaceMappings), Verdict: Verified}
	problem := func(format string, args ...any) {
		v.Verdict = Differs
		v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
	}
	if choice.Rule == versionselect.RuleNotServed {
		v.Verdict, v.Problems = Missing, []string{choice.Explain()}
		return v, nil
	}
	gvr := schema.GroupVersionResource{Group: it.Group, Version: choice.Version, Resource: it.Resource}
	ns, name := v.InTarget()
	var live *unstructured.Unstructured
	err := r.get(ctx, func() (err error) {
		live, err = r.target.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		if controller := r.liveController(ctx, it, gvr); controller != "" {
			v.Verdict, v.Problems = Replaced, []string{"not in the target; its controller " + controller + " is, and makes its own"}
			return v, nil
		}
		v.Verdict, v.Problems = Missing, []string{fmt.Sprintf("%s %s is not in the target", gvr.GroupResource(), qualifiedName(ns, name))}
		return v, nil
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		v.Verdict, v.Problems = Missing, []string{"get: " + err.Error()}
		return v, nil
	case live.GetDeletionTimestamp() != nil:
		// Being deleted (a ReplicaSet's surplus Pod, waiting on a finalizer): gone soon.
		if controller := r.liveController(ctx, it, gvr); controller != "" {
			v.Verdict, v.Problems = Replaced, []string{"being deleted; its controller " + controller + " is, and makes its own"}
			return v, nil
		}
		v.Verdict, v.Problems = Missing, []string{fmt.Sprintf("%s %s is being deleted", gvr.GroupResource(), qualifiedName(ns, name))}
		return v, nil
	}
	for _, ref := range live.GetOwnerReferences() {
		if reason := r.ownerLive(ctx, ref, ns); reason != "" {
			problem("owner %s %s (uid %s): %s", ref.Kind, ref.Name, ref.UID, reason)
		}
	}
	for _, lost := range r.lostOwners(ctx, it, gvr, live) {
		problem("%s", lost)
	}
	if it.GroupResource() == persistentVolumeClaims {
		// A claim Bound in the backup is Bound once restored: its Pods run on it.
		if b, err := body(r.plan.backup, it); err == nil && claimPhase(b) == "Bound" && claimPhase(live) != "Bound" {
			problem("status.phase: %s, where the backup's claim was Bound", claimPhase(live))
		}
	}
	if live.GetAnnotations()[SourceUIDAnnotation] != string(it.UID) {
		v.Adopted = true
		return v, nil
	}
	want, modifiedMeta, err := r.expected(ctx, it)
	if err != nil {
		problem("what the restore makes of the backup's body: %v", err)
		return v, nil
	}
	slices.SortFunc(modifiedMeta, func(a, b metaChange) int { return strings.Compare(a.field+"/"+a.key, b.field+"/"+b.key) })
	for _, c := range modifiedMeta {
		got, ok := live.GetLabels()[c.key]
		if c.field == "annotations" {
			got, ok = live.GetAnnotations()[c.key]
		}
		switch {
		case c.set && (!ok || got != c.want):
			problem("metadata.%s.%s: the resource modifiers set %s, the target has %s", c.field, c.key, shown(c.want, secretValues(it)), shown(got, secretValues(it)))
		case !c.set && ok:
			problem("metadata.%s.%s: the resource modifiers removed it, the target has it", c.field, c.key)
		}
	}
	for _, field := range sortedKeys(want.Object) {
		if field == "metadata" || field == "status" || field == "apiVersion" || field == "kind" {
			continue
		}
		if field == "spec" && r.plan.volumes.snapshot[it] != nil {
			continue // its volume is the one its VolumeSnapshotter made, named as the plugin names it
		}
		for _, d := range differences(field, want.Object[field], live.Object[field], secretValues(it)) {
			problem("%s", d)
		}
	}
	return v, nil
}

// get retries a read through transient errors, as the restore does.
func (r *run) get(ctx context.Context, f func() error) error {
	var retries int
	return retryTransient(ctx, r.opts.Retry, &retries, nil, f)
}

// templateControllers make the objects they own from a template, and make new ones
// when those are gone.
var templateControllers = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "ReplicaSet"}: true, {Group: "apps", Kind: "StatefulSet"}: true,
	{Group: "apps", Kind: "DaemonSet"}: true, {Group: "batch", Kind: "Job"}: true, {Kind: "ReplicationController"}: true,
}

// liveController names the object's controller, from the backup, when it is in the
// target and is one of the templateControllers. "" when there is none.
func (r *run) liveController(ctx context.Context, it *manifest.Item, gvr schema.GroupVersionResource) string {
	o := &Object{Item: it, Resource: gvr, Result: &ObjectResult{}}
	if r.stepRead(ctx, o) != nil {
		return ""
	}
	ref := metav1.GetControllerOf(o.Backup)
	if ref == nil {
		return ""
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || !templateControllers[gv.WithKind(ref.Kind).GroupKind()] {
		return ""
	}
	owner, ok := r.backup.Manifest().ByUID(ref.UID)
	if !ok {
		return ""
	}
	choice, _ := r.plan.versions.For(owner.GroupResource())
	ns, name := refOf(owner, choice.Version, r.sel.NamespaceMappings).InTarget()
	ogvr := schema.GroupVersionResource{Group: owner.Group, Version: choice.Version, Resource: owner.Resource}
	err := r.get(ctx, func() error {
		_, err := r.target.Dynamic.Resource(ogvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if err != nil {
		return ""
	}
	return owner.Kind + " " + qualifiedName(ns, name)
}

// lostOwners names each owner the object has in the backup that is in the target but
// that the live object no longer names: ownership lost, as by a restore that removes
// ownerReferences. Nothing then cascades from the owner, and a link no controller makes
// again is gone for good. An owner that is not in the target is not this object's
// problem (the owner's own verdict says Missing, or it was left out of the restore).
func (r *run) lostOwners(ctx context.Context, it *manifest.Item, gvr schema.GroupVersionResource, live *unstructured.Unstructured) []string {
	o := &Object{Item: it, Resource: gvr, Result: &ObjectResult{}}
	if r.stepRead(ctx, o) != nil {
		return nil
	}
	var lost []string
	for _, ref := range o.Backup.GetOwnerReferences() {
		owner, ok := r.backup.Manifest().ByUID(ref.UID)
		if !ok {
			continue
		}
		choice, _ := r.plan.versions.For(owner.GroupResource())
		if choice.Rule == versionselect.RuleNotServed {
			continue
		}
		ns, name := refOf(owner, choice.Version, r.sel.NamespaceMappings).InTarget()
		ogvr := schema.GroupVersionResource{Group: owner.Group, Version: choice.Version, Resource: owner.Resource}
		var liveOwner *unstructured.Unstructured
		err := r.get(ctx, func() (err error) {
			liveOwner, err = r.target.Dynamic.Resource(ogvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			return err
		})
		if err != nil {
			continue
		}
		// A reference by kind and name to another UID is reported as a dead owner.
		named := false
		for _, lref := range live.GetOwnerReferences() {
			named = named || lref.UID == liveOwner.GetUID() || (lref.Kind == owner.Kind && lref.Name == name)
		}
		if !named {
			lost = append(lost, fmt.Sprintf("ownership lost: its owner %s %s is in the target (uid %s), but the object no longer names it",
				owner.Kind, qualifiedName(ns, name), liveOwner.GetUID()))
		}
	}
	return lost
}

// expected is what the restore makes of the object's body, before it is created, and
// the labels and annotations the resource modifiers changed in it: the run's steps
// (cut at StepCreate by Verify) as a dry run.
func (r *run) expected(ctx context.Context, it *manifest.Item) (*unstructured.Unstructured, []metaChange, error) {
	st := new(objectState)
	o := &st.o
	if err := r.object(o, it, &st.res, &st.budget); err != nil {
		return nil, nil, err
	}
	defer st.budget.close()
	o.DryRun = true
	if err := r.runSteps(ctx, o, r.steps); err != nil {
		return nil, nil, err
	}
	if o.Body == nil {
		return nil, nil, fmt.Errorf("the steps made no body (is %q among them?)", StepRead)
	}
	return o.Body, o.modifiedMeta, nil
}

// ownerLive says why ref names no live object in the target; "" when it does.
func (r *run) ownerLive(ctx context.Context, ref metav1.OwnerReference, namespace string) string {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return err.Error()
	}
	if r.target.Mapper == nil {
		return "the target has no RESTMapper to look for it"
	}
	mapping, err := r.target.Mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, gv.Version)
	if err != nil {
		return "its kind is not served: " + err.Error()
	}
	client := r.target.Dynamic.Resource(mapping.Resource)
	var owner *unstructured.Unstructured
	err = r.get(ctx, func() (err error) {
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			owner, err = client.Namespace(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		} else {
			owner, err = client.Get(ctx, ref.Name, metav1.GetOptions{})
		}
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		return "not in the target"
	case err != nil:
		return err.Error()
	case owner.GetUID() != ref.UID:
		return fmt.Sprintf("the %s of that name has uid %s", ref.Kind, owner.GetUID())
	}
	return ""
}

// secretValues reports whether the values of it are secret: a Secret's are never shown,
// in a report or anywhere else.
func secretValues(it *manifest.Item) bool { return it.Group == "" && it.Resource == "secrets" }

// differences lists where want, a field of what the restore makes, is not in got: every
// map key of want must be in got with the same value; lists must be as long and alike
// element by element; what got has beyond want is the target's own. With hide, each
// difference names its field and not the values.
func differences(path string, want, got any, hide bool) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, the target has %v", path, shown(got, hide))}
		}
		var out []string
		for _, k := range sortedKeys(w) {
			out = append(out, differences(path+"."+k, w[k], g[k], hide)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %d elements, the target has %v", path, len(w), shown(got, hide))}
		}
		var out []string
		for i := range w {
			out = append(out, differences(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], hide)...)
		}
		return out
	}
	if !reflect.DeepEqual(want, got) {
		if hide {
			return []string{path + ": not what the backup holds (a Secret's values are not shown)"}
		}
		return []string{fmt.Sprintf("%s: want %v, the target has %v", path, short(want), short(got))}
	}
	return nil
}

// shown is v for a report: short, or not at all when it is secret.
func shown(v any, hide bool) string {
	if hide && v != nil {
		return "other values (a Secret's values are not shown)"
	}
	return short(v)
}

func short(v any) string {
	s := fmt.Sprint(v)
	if v == nil {
		s = "nothing"
	}
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func qualifiedName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + strings.TrimSpace(name)
}

// claimPhase is a claim's status.phase, Pending when it has none.
func claimPhase(claim *unstructured.Unstructured) string {
	phase, _, _ := unstructured.NestedString(claim.Object, "status", "phase")
	if phase == "" {
		return "Pending"
	}
	return phase
}
