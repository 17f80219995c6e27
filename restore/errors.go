package restore

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// The errors of one object's outcome (ObjectResult.Err) are typed, so that a caller
// tells them apart with errors.Is and errors.As:
//
//   - ErrItemTimeout: its own work took longer than RunOptions.ItemTimeout.
//   - The API server's refusals are its *apierrors.StatusError, wrapped:
//     apierrors.IsForbidden, IsInvalid (the field causes in its Status().Details),
//     IsConflict, IsAlreadyExists (with the Fail policy) and the rest apply as they do
//     to client-go's own errors.
//   - *PluginError: a restore item action failed, named; *readiness.AdditionalItemsError:
//     what it asked to wait for was not ready in time, in strict mode.
//   - *WebhookError: an admission webhook refused it, or could not be called (after
//     retries within the object's time), named with its Service.
//   - *BlockedError (errors.Is ErrBlocked): skipped, because an object it depends on
//     failed or it is on a dependency cycle.
//   - ErrNotServed: the target serves no version of its group-resource.
//   - *StepError: every failure in the pipeline says which step it was in.
//   - context.Canceled and the like: the restore stopped before the object started
//     (Cancelled).
var (
	// ErrBlocked is matched by every *BlockedError.
	ErrBlocked = errors.New("blocked by a dependency")
	// ErrNotServed: the target serves no version of the object's group-resource, and no
	// CRD in the backup provides it.
	ErrNotServed = errors.New("not served by the target")
)

// StepError is an object's failure in one step of its pipeline. Its message is the
// failure's own.
type StepError struct {
	Step StepName // StepCreate, StepReady, ... or a caller's step's name
	Err  error
}

func (e *StepError) Error() string { return e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// PluginError is a restore item action's failure: its Execute failed or hung, or what it
// asked to wait for did not come.
type PluginError struct {
	Plugin string
	Err    error
}

func (e *PluginError) Error() string { return "plugin " + e.Plugin + ": " + e.Err.Error() }
func (e *PluginError) Unwrap() error { return e.Err }

// BlockedError is why an object was skipped without being tried: By failed (or was
// itself skipped), and Chain leads from it to this object, by source UID. On a cycle,
// Cycle is set and By and Chain are empty.
type BlockedError struct {
	By    types.UID
	Chain []types.UID
	Cycle bool
	Err   error // the scheduler's account of it
}

func (e *BlockedError) Error() string {
	if e.Cycle {
		return "on or behind a dependency cycle"
	}
	return e.Err.Error()
}
func (e *BlockedError) Unwrap() error        { return e.Err }
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// WebhookError is the API server's refusal of an object on an admission webhook's
// account: Denied when the webhook answered no, with its Reason; otherwise the webhook
// could not be called (Reason says why: its Service has no endpoints, a TLS error...),
// and the restore retried within the object's time. Service is the webhook's Service
// as namespace/name, when the API server's message names it.
type WebhookError struct {
	Webhook string
	Denied  bool
	Reason  string
	Service string
	Err     error // the API server's *apierrors.StatusError
}

func (e *WebhookError) Error() string {
	if e.Denied {
		return fmt.Sprintf("admission webhook %q denied the request: %s", e.Webhook, e.Reason)
	}
	svc := ""
	if e.Service != "" {
		svc = " (Service " + e.Service + ")"
	}
	return fmt.Sprintf("admission webhook %q%s could not be called: %s", e.Webhook, svc, e.Reason)
}

func (e *WebhookError) Unwrap() error { return e.Err }

// webhookService finds a Service's in-cluster name in the URL the API server called.
var webhookService = regexp.MustCompile(`https://([a-z0-9-]+)\.([a-z0-9-]+)\.svc\b`)

// asWebhookError returns a step's error as a *WebhookError, wrapping it, when the API
// server's refusal in it is on an admission webhook's account; err as it is otherwise.
func asWebhookError(err error) error {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return err
	}
	msg := st.Status().Message
	if name, rest, ok := quotedAfter(msg, "admission webhook "); ok && strings.HasPrefix(rest, " denied the request") {
		reason := strings.TrimPrefix(strings.TrimPrefix(rest, " denied the request"), ": ")
		return &WebhookError{Webhook: name, Denied: true, Reason: strings.TrimSpace(reason), Err: err}
	}
	if name, rest, ok := quotedAfter(msg, "failed calling webhook "); ok {
		we := &WebhookError{Webhook: name, Reason: strings.TrimPrefix(rest, ": "), Err: err}
		if m := webhookService.FindStringSubmatch(rest); m != nil {
			we.Service = m[2] + "/" + m[1]
		}
		return we
	}
	return err
}

// quotedAfter finds prefix followed by a quoted string in msg: the string, and what
// follows its closing quote.
func quotedAfter(msg, prefix string) (quoted, rest string, ok bool) {
	_, after, found := strings.Cut(msg, prefix+`"`)
	if !found {
		return "", "", false
	}
	quoted, rest, ok = strings.Cut(after, `"`)
	return quoted, rest, ok
}
