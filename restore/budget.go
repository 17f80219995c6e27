package restore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
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
	clock  clock.Clock
	total  time.Duration
	spent  time.Duration
	alarms *sync.Pool // of *alarm, when not nil: alarms used again from run to run

	// The context of its runs and the one it was made from: made for the first run and
	// used again by the next runs given the same context, as long as nothing may have
	// cancelled it, so that an object's runs (three or more) cost one context, not one
	// each (a context a run was a tenth of what a restore allocated). close lets it go.
	parent  context.Context
	ctx     context.Context
	cancel  context.CancelCauseFunc
	running bool
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
	if af, ok := b.clock.(afterFuncer); ok {
		shared := !b.running // a run within a run gets a context of its own
		var cancel context.CancelCauseFunc
		if shared {
			b.running = true
			defer func() { b.running = false }()
			ctx, cancel = b.context(ctx)
		} else {
			ctx, cancel = context.WithCancelCause(ctx)
			defer cancel(nil)
		}
		a := b.arm(af, cancel)
		err := f(ctx)
		if (!b.disarm(a) || ctx.Err() != nil) && shared {
			b.close() // its alarm fired, or is firing, or it was cancelled: not used again
		}
		return b.charge(ctx, start, err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	t := b.clock.NewTimer(b.remaining())
	done := make(chan struct{})
	go func() {
		select {
		case <-t.C():
			cancel(ErrItemTimeout)
		case <-done:
		}
	}()
	err := f(ctx)
	t.Stop()
	close(done)
	cancel(nil)
	return b.charge(ctx, start, err)
}

// context returns the context of a run given parent: the last run's, when it was made
// from parent and is still good, or a new one.
func (b *budget) context(parent context.Context) (context.Context, context.CancelCauseFunc) {
	if b.ctx == nil || !sameContext(b.parent, parent) {
		b.close()
		b.parent = parent
		b.ctx, b.cancel = context.WithCancelCause(parent)
	}
	return b.ctx, b.cancel
}

// close cancels the runs' context, if there is one, and lets it go: the object's work is
// over, or the context may have been cancelled.
func (b *budget) close() {
	if b.cancel != nil {
		b.cancel(nil)
		b.parent, b.ctx, b.cancel = nil, nil, nil
	}
}

// sameContext reports whether a and b are one context. Contexts of a type that cannot be
// compared (== would panic) are taken to be two.
func sameContext(a, b context.Context) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta != nil && ta == tb && ta.Comparable() && a == b
}

// charge charges the budget for a run begun at start, whose context was ctx, and
// returns its error, which says when the budget ran out.
func (b *budget) charge(ctx context.Context, start time.Time, err error) error {
	b.spent += b.clock.Since(start)
	if err != nil && errors.Is(context.Cause(ctx), ErrItemTimeout) && !errors.Is(err, ErrItemTimeout) {
		return fmt.Errorf("%w (%s): %w", ErrItemTimeout, b.total, err)
	}
	return err
}

// alarm cancels the run under way with ErrItemTimeout when its timer fires. One alarm
// serves run after run, object after object (budget.alarms): a timer and a function
// made for each run was 3% of what a restore allocated, and arming them 2% of its CPU.
type alarm struct {
	t      clock.Timer
	mu     sync.Mutex
	cancel context.CancelCauseFunc // the run's under way
}

func (a *alarm) fire() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cancel(ErrItemTimeout)
}

// arm sets an alarm to cancel a run with cancel when what is left of the budget runs
// out.
func (b *budget) arm(af afterFuncer, cancel context.CancelCauseFunc) *alarm {
	var a *alarm
	if b.alarms != nil {
		a, _ = b.alarms.Get().(*alarm)
	}
	if a == nil {
		a = &alarm{cancel: cancel}
		a.t = af.AfterFunc(b.remaining(), a.fire)
		return a
	}
	a.mu.Lock()
	a.cancel = cancel
	a.mu.Unlock()
	a.t.Reset(b.remaining())
	return a
}

// disarm stops a, and keeps it for another run when its timer had not fired. One that
// has fired, or is firing, cancels the run it was set for, which has ended, and is let
// go: disarm then reports false.
func (b *budget) disarm(a *alarm) bool {
	stopped := a.t.Stop()
	if stopped && b.alarms != nil {
		b.alarms.Put(a)
	}
	return stopped
}
