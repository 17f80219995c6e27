package main

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/flowcontrol"
)

// meteredLimiter is the client's rate limiter, counting the time requests spent waiting
// for it: how much client-side throttling holds a restore back.
type meteredLimiter struct {
	flowcontrol.RateLimiter
	waited atomic.Int64 // nanoseconds, summed over every request
}

func newMeteredLimiter(qps float32, burst int) *meteredLimiter {
	return &meteredLimiter{RateLimiter: flowcontrol.NewTokenBucketRateLimiter(qps, burst)}
}

func (m *meteredLimiter) Wait(ctx context.Context) error {
	start := time.Now()
	err := m.RateLimiter.Wait(ctx)
	m.waited.Add(int64(time.Since(start)))
	return err
}

func (m *meteredLimiter) Accept() {
	start := time.Now()
	m.RateLimiter.Accept()
	m.waited.Add(int64(time.Since(start)))
}

// Waited returns the time requests have waited for the limiter so far.
func (m *meteredLimiter) Waited() time.Duration { return time.Duration(m.waited.Load()) }
