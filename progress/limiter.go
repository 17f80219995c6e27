package progress

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/flowcontrol"
)

// throttled is the shortest wait counted as throttling: a request that finds a token
// spends microseconds in the limiter, and thousands of free passes must not add up to a
// wait (the progress line then asked to raise --client-qps when nothing had waited).
const throttled = time.Millisecond

// Limiter is a client's rate limiter (rest.Config.RateLimiter), counting the time
// requests spent waiting for it: how much client-side throttling holds a restore back.
type Limiter struct {
	flowcontrol.RateLimiter
	waited atomic.Int64 // nanoseconds, summed over every request
}

// NewLimiter returns a token bucket of qps and burst that counts the waits.
func NewLimiter(qps float32, burst int) *Limiter {
	return &Limiter{RateLimiter: flowcontrol.NewTokenBucketRateLimiter(qps, burst)}
}

// Wait and Accept take a token that is there without timing anything: a request
// that did not wait is not counted, however long the goroutine was kept off a core
// meanwhile (under load, ten thousand free passes added up to 15 ms).
func (m *Limiter) Wait(ctx context.Context) error {
	if m.RateLimiter.TryAccept() {
		return nil
	}
	start := time.Now()
	err := m.RateLimiter.Wait(ctx)
	m.count(time.Since(start))
	return err
}

func (m *Limiter) Accept() {
	if m.RateLimiter.TryAccept() {
		return
	}
	start := time.Now()
	m.RateLimiter.Accept()
	m.count(time.Since(start))
}

func (m *Limiter) count(d time.Duration) {
	if d >= throttled {
		m.waited.Add(int64(d))
	}
}

// Waited returns the time requests have waited for the limiter so far.
func (m *Limiter) Waited() time.Duration { return time.Duration(m.waited.Load()) }
