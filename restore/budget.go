package restore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/utils/clock"
)

// ErrItemTimeout is wrapped by the error of an object whose own work (reading, creating,
// retrying, becoming ready) took longer than RunOptions.ItemTimeout.
var ErrItemTimeout = errors.New("object took longer than the item timeout")

// budget is the time an object's own work may take: RunOptions.ItemTimeout, charged step by
// step. Steps that bound their own waits (a plugin's wait for its additional items, with
// the plugin's timeout) are not charged, so that a long wait the plugin asked for is not
// cut short by a shorter item timeout. It runs on the restore's clock.
type budget struct {
	clock clock.Clock
	total time.Duration
	spent time.Duration
}

// remaining is what is left of the budget.
func (b *budget) remaining() time.Duration { return max(b.total-b.spent, 0) }

// afterFuncer is a clock that runs a function after a delay without a goroutine of
// its own waiting: the real clock (time.AfterFunc) and client-go's fake clocks.
type afterFuncer interface {
	AfterFunc(d time.Duration, f func()) clock.Timer
}

// run runs f, some steps, within what is left of the budget: its context is cancelled,
// with ErrItemTimeout as the cause, when the budget runs out.
func (b *budget) run(ctx context.Context, f func(context.Context) error) error {
	start := b.clock.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	var stop func()
	if af, ok := b.clock.(afterFuncer); ok {
		t := af.AfterFunc(b.remaining(), func() { cancel(ErrItemTimeout) })
		stop = func() { t.Stop() }
	} else {
		t := b.clock.NewTimer(b.remaining())
		done := make(chan struct{})
		go func() {
			select {
			case <-t.C():
				cancel(ErrItemTimeout)
			case <-done:
			}
		}()
		stop = func() { t.Stop(); close(done) }
	}
	err := f(ctx)
	stop()
	cancel(nil)
	b.spent += b.clock.Since(start)
	if err != nil && errors.Is(context.Cause(ctx), ErrItemTimeout) && !errors.Is(err, ErrItemTimeout) {
		return fmt.Errorf("%w (%s): %w", ErrItemTimeout, b.total, err)
	}
	return err
}
