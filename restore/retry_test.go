package restore

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
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

// A server away for longer than the backoff takes to reach its Cap is retried at the
// Cap for as long as the object's time allows, not given up on.
func TestRetryOutlastsTheCap(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	b := wait.Backoff{Duration: time.Millisecond, Factor: 2, Cap: 4 * time.Millisecond, Steps: 1 << 30}
	calls, retries := 0, 0
	err := retryTransient(context.Background(), b, &retries, func() error {
		calls++
		if calls <= 20 { // about 70 ms away: the Cap is reached after 3 retries
			return refused
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 20, retries)

	// The object's time ends the retries, and both causes are told.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err = retryTransient(ctx, b, &retries, func() error { return refused })
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)

	// A backoff without a Cap is bounded by its Steps.
	calls = 0
	err = retryTransient(context.Background(), wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 3}, &retries, func() error { calls++; return refused })
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Equal(t, 3, calls)

	// What is not transient is not retried.
	calls = 0
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "c", nil)
	err = retryTransient(context.Background(), b, &retries, func() error { calls++; return invalid })
	assert.Equal(t, invalid, err)
	assert.Equal(t, 1, calls)
}
