package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/restoregraph/restoregraph/restore"
)

// A refusal the API server, asked again, allows is the authorizer not yet ready (a
// kube-apiserver just started, its RBAC not read): the Restore is carried out again
// later. One it confirms, or worded otherwise, stands.
func TestRefusedButAllowed(t *testing.T) {
	ctx := context.Background()
	var asked map[string]any
	target := func(allowed bool) restore.Target {
		dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
		dyn.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
			review := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured)
			asked, _, _ = unstructured.NestedMap(review.Object, "spec", "resourceAttributes")
			review = review.DeepCopy()
			_ = unstructured.SetNestedField(review.Object, allowed, "status", "allowed")
			return true, review, nil
		})
		return restore.Target{Dynamic: dyn}
	}
	refusal := apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "",
		errors.New(`User "system:serviceaccount:velero:restoregraph" cannot list resource "leases" in API group "coordination.k8s.io" in the namespace "restoregraph-admission"`))
	wrapped := errors.Join(errors.New("restore: admission: list operations"), refusal)

	assert.True(t, refusedButAllowed(ctx, target(true), wrapped))
	assert.Equal(t, map[string]any{"verb": "list", "group": "coordination.k8s.io", "resource": "leases", "namespace": "restoregraph-admission", "name": ""}, asked)
	assert.False(t, refusedButAllowed(ctx, target(false), wrapped), "a right the user lacks")

	cluster := apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "",
		errors.New(`User "alice" cannot create resource "namespaces" in API group "" at the cluster scope`))
	assert.True(t, refusedButAllowed(ctx, target(true), cluster))
	assert.Equal(t, "", asked["namespace"])

	byWebhook := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "c", errors.New(`admission webhook "x" denied the request: no`))
	assert.False(t, refusedButAllowed(ctx, target(true), byWebhook), "not the authorizer's")
	assert.False(t, refusedButAllowed(ctx, target(true), errors.New("etcd is away")))
}
