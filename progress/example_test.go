package progress_test

import (
	"os"
	"time"

	"github.com/restoregraph/restoregraph/progress"
	"github.com/restoregraph/restoregraph/restore"
)

// The progress of a restore on standard error, as the command draws it: the client's
// rate limiter and its connection watched, the line fed the restore's events.
func ExampleNewLine() {
	limiter := progress.NewLimiter(200, 400) // the client configuration's RateLimiter
	var reach progress.Reachability          // and its WrapTransport: reach.Wrap
	line := progress.NewLine(os.Stderr, 1000)
	line.Throttle, line.Reach = limiter.Waited, &reach
	opts := restore.RunOptions{OnEvent: line.Event, ItemTimeout: 5 * time.Minute}
	_ = opts // restore.Apply(ctx, plan, target, opts)
	line.Finish()
}
