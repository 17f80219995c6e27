package restore

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
)

// transient reports whether an API error is worth retrying: throttling, server errors,
// timeouts and connection failures.
func transient(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err) {
		return true
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code >= 500 {
		return true
	}
	// The ServiceAccount admission plugin refuses a Pod until the namespace's default
	// ServiceAccount exists, which the target's controller makes moments after the
	// namespace: worth retrying, within the object's time.
	if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "error looking up service account") &&
		strings.Contains(err.Error(), `serviceaccount "default" not found`) {
		return true
	}
	// What the API server could not store or read because etcd was away, even where it
	// answers with another status: a Service whose cluster IP could not be allocated is
	// Invalid ("failed to allocate IP: rpc error: code = Unavailable ...").
	if msg := err.Error(); strings.Contains(msg, "rpc error: code = Unavailable") ||
		strings.Contains(msg, "etcdserver: leader changed") || strings.Contains(msg, "etcdserver: request timed out") {
		return true
	}
	// A connection cut while the answer was read: client-go says "unexpected error when
	// reading response body. Please retry", around what the transport said: an
	// io.ErrUnexpectedEOF, or HTTP/2's "client connection force closed", which is no
	// net.Error. A create whose answer was lost may have been made: its retry finds it by
	// its source UID.
	if strings.Contains(err.Error(), "unexpected error when reading response body") {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF)
}

// IsTransient reports whether err says that the API server, or etcd behind it, was
// away, failing or throttling for a moment, rather than anything about the request:
// what a restore retries, and what a caller may try again later.
func IsTransient(err error) bool { return transient(err) }

// retryTransient calls f until it returns a non-transient result, backing off between
// attempts as b says, within ctx. It returns f's last error, joined with ctx's when ctx
// ended the retries.
//
// Once the backoff reaches b.Cap it stays there, and the retries go on for as long as
// ctx (the object's own time) allows: a server away for a minute, restarting or behind
// a load balancer changing its leader, is the most ordinary fault there is.
// wait.ExponentialBackoff would stop at the Cap, a few seconds in. Without a Cap,
// b.Steps bounds the attempts.
//
// A Forbidden is retried too while the API server is settling (settling, when not nil,
// says so) and once after the server was away: a kube-apiserver that has just started
// answers before its authorizer has read the cluster's RBAC, and refuses what a moment
// later it allows.
func retryTransient(ctx context.Context, b wait.Backoff, retries *int, settling func(context.Context) bool, f func() error) error {
	delay := b.DelayFunc()
	away := false // the last attempt found the server away or failing
	for attempt := 1; ; attempt++ {
		last := f()
		if apierrors.IsForbidden(last) && !transient(last) {
			if !away && (settling == nil || !settling(ctx)) {
				return last
			}
			away = false
		} else if away = transient(last); !away {
			return last
		}
		if b.Cap <= 0 && attempt >= b.Steps {
			return last
		}
		*retries++
		t := time.NewTimer(delay())
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(ctx.Err(), last)
		case <-t.C:
		}
	}
}
