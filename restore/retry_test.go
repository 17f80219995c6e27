package restore

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTransient(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	// As kube-apiserver's ServiceAccount admission says it.
	defaultSA := apierrors.NewForbidden(pods, "web-1", errors.New(`error looking up service account shop/default: serviceaccount "default" not found`))
	namedSA := apierrors.NewForbidden(pods, "web-1", errors.New(`error looking up service account shop/app: serviceaccount "app" not found`))
	assert.True(t, transient(defaultSA), "the namespace's default ServiceAccount is on its way")
	assert.False(t, transient(namedSA), "a named ServiceAccount comes from the backup or not at all")
	assert.True(t, transient(apierrors.NewTooManyRequests("slow down", 1)))
	assert.False(t, transient(apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "web", nil)))
}
