package restore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
	// As kube-apiserver answered while etcd's members were killed and started again.
	noIP := apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "svc-037", field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs"),
		[]string{""}, "failed to allocate IP: rpc error: code = Unavailable desc = error reading from server: connection reset by peer")})
	assert.True(t, transient(noIP), "etcd was away")
	assert.True(t, transient(apierrors.NewInternalError(errors.New("etcdserver: leader changed"))))
	// As client-go says it when the connection is cut while it reads the answer.
	assert.True(t, transient(fmt.Errorf("unexpected error when reading response body. Please retry. Original error: %w", io.ErrUnexpectedEOF)))
	assert.True(t, transient(fmt.Errorf("unexpected error when reading response body. Please retry. Original error: %w",
		errors.New("http2: client connection force closed via ClientConn.Close"))), "as a chaos run found it: an HTTP/2 connection closed mid-answer")
	assert.False(t, transient(apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "web", field.ErrorList{
		field.Invalid(field.NewPath("spec", "clusterIP"), "10.0.0.999", "not an IP")})))
}

// A server away for longer than the backoff takes to reach its Cap is retried at the
// Cap for as long as the object's time allows, not given up on.
func TestRetryOutlastsTheCap(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	b := wait.Backoff{Duration: time.Millisecond, Factor: 2, Cap: 4 * time.Millisecond, Steps: 1 << 30}
	calls, retries := 0, 0
	err := retryTransient(context.Background(), b, &retries, nil, func() error {
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
	err = retryTransient(ctx, b, &retries, nil, func() error { return refused })
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)

	// A backoff without a Cap is bounded by its Steps.
	calls = 0
	err = retryTransient(context.Background(), wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 3}, &retries, nil, func() error { calls++; return refused })
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Equal(t, 3, calls)

	// What is not transient is not retried.
	calls = 0
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "c", nil)
	err = retryTransient(context.Background(), b, &retries, nil, func() error { calls++; return invalid })
	assert.Equal(t, invalid, err)
	assert.Equal(t, 1, calls)
}

// A Forbidden is final, but while the API server says it is settling (not ready, its
// authorizer not yet caught up with the cluster's RBAC), and once right after the server
// was away.
func TestForbiddenIsRetriedWhileTheServerSettles(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "web", errors.New(`User "rg" cannot create resource "services"`))
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	b := wait.Backoff{Duration: time.Millisecond, Factor: 1, Cap: time.Millisecond, Steps: 1 << 30}
	ready := func(context.Context) bool { return false }
	run := func(settling func(context.Context) bool, answers ...error) (error, int) {
		calls, retries := 0, 0
		err := retryTransient(context.Background(), b, &retries, settling, func() error {
			calls++
			if calls > len(answers) {
				return nil
			}
			return answers[calls-1]
		})
		return err, calls
	}

	err, calls := run(ready, forbidden)
	assert.Equal(t, forbidden, err, "a ready server's Forbidden is final")
	assert.Equal(t, 1, calls)
	err, calls = run(nil, forbidden)
	assert.Equal(t, forbidden, err, "so is one from a server that cannot tell")
	assert.Equal(t, 1, calls)

	settled := 0
	settling := func(context.Context) bool { settled++; return settled <= 3 }
	err, calls = run(settling, forbidden, forbidden, forbidden)
	assert.NoError(t, err, "retried while the server settles, then allowed")
	assert.Equal(t, 4, calls)

	err, calls = run(ready, refused, forbidden)
	assert.NoError(t, err, "retried once after the server was away")
	assert.Equal(t, 3, calls)
	err, calls = run(ready, refused, forbidden, forbidden)
	assert.Equal(t, forbidden, err, "but once only")
	assert.Equal(t, 3, calls)
}
