package controller

import (
	"context"
	"regexp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/restoregraph/restoregraph/restore"
)

// rbacRefusal is how the API server's RBAC authorizer words a refusal: what was asked,
// on what, and where.
var rbacRefusal = regexp.MustCompile(`cannot (\S+) resource "([^"]*)" in API group "([^"]*)" (?:in the namespace "([^"]*)"|at the cluster scope)`)

// refusedButAllowed reports whether err is the API server's refusal of a request that
// the same API server, asked now as the same user (tgt's), allows: an authorizer that
// had not read the cluster's RBAC yet when it answered, as a kube-apiserver just started
// does, and not a right the user lacks. The Restore is then carried out again later
// rather than failed. A refusal the review confirms, or one it cannot ask about, stands.
func refusedButAllowed(ctx context.Context, tgt restore.Target, err error) bool {
	if !apierrors.IsForbidden(err) {
		return false
	}
	m := rbacRefusal.FindStringSubmatch(err.Error())
	if m == nil {
		return false
	}
	allowed, rerr := accessReview(ctx, tgt, right{verb: m[1], gr: schema.GroupResource{Group: m[3], Resource: m[2]}, namespace: m[4]})
	return rerr == nil && allowed
}
