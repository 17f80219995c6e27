package readiness

import (
	"context"
	"errors"
	"fmt"
	"time"

	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	v2 "github.com/restoregraph/restoregraph/plugin/restoreitemaction/v2"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// DefaultAdditionalItemsTimeout is how long additional items are waited for when the
// plugin does not say.
const DefaultAdditionalItemsTimeout = 10 * time.Minute

// ErrAdditionalItemsNotReady is wrapped by every *AdditionalItemsError.
var ErrAdditionalItemsNotReady = errors.New("additional items not ready")

// AdditionalItemsError says a plugin's additional items were not ready in time, or that
// asking failed.
type AdditionalItemsError struct {
	Plugin  string
	Items   []ria.ResourceIdentifier
	Timeout time.Duration
	Err     error // the plugin's error, when it returned one
}

func (e *AdditionalItemsError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("plugin %s: AreAdditionalItemsReady for %v: %v", e.Plugin, e.Items, e.Err)
	}
	return fmt.Sprintf("plugin %s: additional items %v not ready after %s", e.Plugin, e.Items, e.Timeout)
}

func (e *AdditionalItemsError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrAdditionalItemsNotReady, e.Err}
	}
	return []error{ErrAdditionalItemsNotReady}
}

// AdditionalItemsWaiter polls a plugin's AreAdditionalItemsReady. The zero value uses
// the real clock, DefaultAdditionalItemsTimeout, and Velero's lenient behaviour.
type AdditionalItemsWaiter struct {
	Clock clock.Clock
	// Default applies when the plugin's own timeout is zero.
	Default time.Duration
	// Strict fails the item on timeout or error; otherwise the error is recorded and
	// the item goes on.
	Strict bool
	// Backoff spaces the polls; default 200ms doubling to 5s.
	Backoff wait.Backoff
}

// Wait polls until the items are ready. It returns (recorded, nil) when the item may go
// on — recorded being the error to note in the report, nil when they became ready — and
// (nil, err) when the item must fail: in strict mode, or when ctx is done.
func (a AdditionalItemsWaiter) Wait(ctx context.Context, plugin string, action v2.RestoreItemAction, items []ria.ResourceIdentifier, restore *ria.Restore, pluginTimeout time.Duration) (recorded error, fail error) {
	c := a.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	timeout := pluginTimeout
	if timeout <= 0 {
		timeout = a.Default
	}
	if timeout <= 0 {
		timeout = DefaultAdditionalItemsTimeout
	}
	backoff := a.Backoff
	if backoff.Duration == 0 {
		backoff = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Cap: 5 * time.Second, Steps: 1 << 30}
	}
	deadline := c.NewTimer(timeout)
	defer deadline.Stop()
	outcome := func(err *AdditionalItemsError) (error, error) {
		if a.Strict {
			return nil, err
		}
		return err, nil
	}
	for {
		ready, err := v2.AreAdditionalItemsReady(ctx, action, items, restore)
		if err != nil {
			return outcome(&AdditionalItemsError{Plugin: plugin, Items: items, Timeout: timeout, Err: err})
		}
		if ready {
			return nil, nil
		}
		t := c.NewTimer(backoff.Step())
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-deadline.C():
			t.Stop()
			return outcome(&AdditionalItemsError{Plugin: plugin, Items: items, Timeout: timeout})
		case <-t.C():
		}
	}
}
