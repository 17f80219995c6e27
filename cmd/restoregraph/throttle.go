package main

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

// meteredLimiter is the client's rate limiter, counting the time requests spent waiting
// for it: how much client-side throttling holds a restore back.
type meteredLimiter struct {
	flowcontrol.RateLimiter
	waited atomic.Int64 // nanoseconds, summed over every request
}

func newMeteredLimiter(qps float32, burst int) *meteredLimiter {
	return &meteredLimiter{RateLimiter: flowcontrol.NewTokenBucketRateLimiter(qps, burst)}
}

// Wait and Accept take a token that is there without timing anything: a request
// that did not wait is not counted, however long the goroutine was kept off a core
// meanwhile (under load, ten thousand free passes added up to 15 ms).
func (m *meteredLimiter) Wait(ctx context.Context) error {
	if m.RateLimiter.TryAccept() {
		return nil
	}
	start := time.Now()
	err := m.RateLimiter.Wait(ctx)
	m.count(time.Since(start))
	return err
}

func (m *meteredLimiter) Accept() {
	if m.RateLimiter.TryAccept() {
		return
	}
	start := time.Now()
	m.RateLimiter.Accept()
	m.count(time.Since(start))
}

func (m *meteredLimiter) count(d time.Duration) {
	if d >= throttled {
		m.waited.Add(int64(d))
	}
}

// Waited returns the time requests have waited for the limiter so far.
func (m *meteredLimiter) Waited() time.Duration { return time.Duration(m.waited.Load()) }
