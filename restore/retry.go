package restore

import (
	"context"
	"errors"
	"net"
	"strings"

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
	var ne net.Error
	return errors.As(err, &ne)
}

// retryTransient calls f until it returns a non-transient result, backing off between attempts,
// within ctx. It returns f's last error, or ctx's.
func retryTransient(ctx context.Context, b wait.Backoff, retries *int, f func() error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, b, func(ctx context.Context) (bool, error) {
		last = f()
		if transient(last) {
			*retries++
			return false, nil
		}
		return true, last
	})
	if last != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || wait.Interrupted(err)) {
		return errors.Join(err, last)
	}
	return err
}
