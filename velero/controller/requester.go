package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/restoregraph/restoregraph/restore"
)

// Who created a Restore, as the API server authenticated them: their name, and their
// groups joined by commas. RequesterPolicy, a MutatingAdmissionPolicy that deploy/
// installs with its binding, sets them on every Restore created, over whatever the
// request said, and keeps them as they were on every update, so that nobody who may
// create or update a Restore can name another user in them.
const (
	RequestedByAnnotation       = "restoregraph.dev/requested-by"
	RequestedByGroupsAnnotation = "restoregraph.dev/requested-by-groups"
	// RequesterPolicy names the MutatingAdmissionPolicy and its binding.
	RequesterPolicy = "restoregraph-requester"
)

// policySettle is how long after RequesterPolicy or its binding is made the API servers
// surely enforce it: they load a new policy within moments, not at once.
const policySettle = 10 * time.Second

// Requester is the user who created a Restore, as RequesterPolicy recorded them.
type Requester struct {
	User   string
	Groups []string
}

// requester reads who created Restore o, and checks that the record can be trusted:
// RequesterPolicy and its binding exist, and were made at least policySettle before o
// (a Restore made before the API server enforced them could carry any name). Each
// error names what is missing.
func (c *Controller) requester(ctx context.Context, o *unstructured.Unstructured) (Requester, error) {
	ann := o.GetAnnotations()
	user := ann[RequestedByAnnotation]
	if user == "" {
		return Requester{}, fmt.Errorf("metadata.annotations[%s]: who created the Restore is not recorded, and the controller restores with "+
			"the rights of whoever did (the MutatingAdmissionPolicy %s records it at creation)", RequestedByAnnotation, RequesterPolicy)
	}
	created := o.GetCreationTimestamp()
	policies := c.clients.AdmissionregistrationV1()
	policy, err := policies.MutatingAdmissionPolicies().Get(ctx, RequesterPolicy, metav1.GetOptions{})
	if err != nil {
		return Requester{}, fmt.Errorf("the MutatingAdmissionPolicy %s, which records who creates a Restore: %w", RequesterPolicy, err)
	}
	binding, err := policies.MutatingAdmissionPolicyBindings().Get(ctx, RequesterPolicy, metav1.GetOptions{})
	if err != nil {
		return Requester{}, fmt.Errorf("the MutatingAdmissionPolicyBinding %s, which records who creates a Restore: %w", RequesterPolicy, err)
	}
	if binding.Spec.PolicyName != RequesterPolicy {
		return Requester{}, fmt.Errorf("the MutatingAdmissionPolicyBinding %s binds policy %q, not %s: who created the Restore is not recorded",
			RequesterPolicy, binding.Spec.PolicyName, RequesterPolicy)
	}
	for _, made := range []metav1.Time{policy.CreationTimestamp, binding.CreationTimestamp} {
		if created.Time.Before(made.Add(policySettle)) {
			return Requester{}, fmt.Errorf("the Restore was created before the MutatingAdmissionPolicy %s and its binding, which record who creates "+
				"a Restore, were surely enforced (%s after they were made): its %s cannot be trusted; create it again", RequesterPolicy, policySettle, RequestedByAnnotation)
		}
	}
	var groups []string
	if g := ann[RequestedByGroupsAnnotation]; g != "" {
		groups = strings.Split(g, ",")
	}
	return Requester{User: user, Groups: groups}, nil
}

var (
	selfSubjectAccessReviews = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews"}
	namespacesResource       = schema.GroupResource{Resource: "namespaces"}
)

// RightsError is a Restore refused because whoever created it may not write what it
// restores: each line names the user, the verb, the resource and the namespace, and an
// object the plan would write so.
type RightsError struct {
	User    string
	Missing []string
}

func (e *RightsError) Error() string {
	shown := e.Missing
	more := ""
	if len(shown) > maxShownRights {
		shown, more = shown[:maxShownRights], fmt.Sprintf("; and %d more", len(e.Missing)-maxShownRights)
	}
	return fmt.Sprintf("%s may not restore what the Restore holds: %s%s", e.User, strings.Join(shown, "; "), more)
}

// maxShownRights is how many missing rights a RightsError's message names; Missing
// holds them all.
const maxShownRights = 8

// right is what a user must be allowed to restore an object: a verb on a resource in
// a namespace ("" for a cluster-scoped one), on the object name names when not "".
type right struct {
	verb            string
	gr              schema.GroupResource
	namespace, name string
}

// checkRights asks the API server, as the requester (tgt impersonates them), whether
// they may create every object plan p restores and read it back, and update it too when
// the Restore updates what exists. A Namespace they may not create is no refusal when
// the cluster has it (exists, read with the controller's rights) and they may read it:
// the restore handles it as one that exists. Nothing is written before this returns nil.
func checkRights(ctx context.Context, p *restore.Plan, tgt restore.Target, req Requester, update bool,
	exists func(ctx context.Context, namespace string) (bool, error)) error {
	verbs := []string{"create", "get"}
	if update {
		verbs = append(verbs, "update", "patch")
	}
	example := map[right]string{} // the first object that needs each right
	var order []right
	var namespaces []string
	for po := range p.Objects() {
		if po.Excluded != "" {
			continue
		}
		gr := schema.GroupResource{Group: po.Group, Resource: po.Resource}
		ns, name := po.Namespace, po.Name
		if po.TargetNamespace != "" {
			ns = po.TargetNamespace
		}
		if gr == namespacesResource {
			if po.TargetName != "" {
				name = po.TargetName
			}
			namespaces = append(namespaces, name)
			continue
		}
		for _, v := range verbs {
			r := right{verb: v, gr: gr, namespace: ns}
			if _, seen := example[r]; !seen {
				example[r] = refName(po.Kind, ns, name)
				order = append(order, r)
			}
		}
	}
	// The verbs lacked on each resource where it is restored, with the object named.
	type lack struct {
		gr              schema.GroupResource
		namespace, what string
	}
	lacked := map[lack][]string{}
	var lacks []lack
	lacksRight := func(r right, what string) {
		l := lack{r.gr, r.namespace, what}
		if _, seen := lacked[l]; !seen {
			lacks = append(lacks, l)
		}
		lacked[l] = append(lacked[l], r.verb)
	}
	for _, r := range order {
		ok, err := accessReview(ctx, tgt, r)
		if err != nil {
			return err
		}
		if !ok {
			lacksRight(r, example[r])
		}
	}
	if len(namespaces) > 0 {
		create := right{verb: "create", gr: namespacesResource}
		mayCreate, err := accessReview(ctx, tgt, create)
		if err != nil {
			return err
		}
		for _, ns := range namespaces {
			if mayCreate {
				break
			}
			there, err := exists(ctx, ns)
			if err != nil {
				return err
			}
			if !there {
				lacksRight(create, "Namespace "+ns+", which the cluster does not have")
				continue
			}
			// Reading a namespace is asked of the namespace itself: a Role in it may allow it.
			read := right{verb: "get", gr: namespacesResource, namespace: ns, name: ns}
			if ok, err := accessReview(ctx, tgt, read); err != nil {
				return err
			} else if !ok {
				lacksRight(read, "Namespace "+ns+", which the restore reads as one that exists")
			}
		}
	}
	if len(lacks) == 0 {
		return nil
	}
	missing := make([]string, 0, len(lacks))
	for _, l := range lacks {
		where := "in namespace " + l.namespace
		if l.namespace == "" {
			where = "at the cluster scope"
		}
		missing = append(missing, fmt.Sprintf("no %s on %s %s (%s)", strings.Join(lacked[l], ", "), l.gr, where, l.what))
	}
	slices.Sort(missing)
	return &RightsError{User: req.User, Missing: missing}
}

// accessReview asks the API server whether the user tgt acts as may do r.
func accessReview(ctx context.Context, tgt restore.Target, r right) (bool, error) {
	review := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
		"spec": map[string]any{"resourceAttributes": map[string]any{"verb": r.verb, "group": r.gr.Group, "resource": r.gr.Resource,
			"namespace": r.namespace, "name": r.name}}}}
	out, err := tgt.Dynamic.Resource(selfSubjectAccessReviews).Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("asking whether the Restore's creator may %s %s: %w", r.verb, r.gr, err)
	}
	ok, _, _ := unstructured.NestedBool(out.Object, "status", "allowed")
	return ok, nil
}

func refName(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}
