package memcluster

import (
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Faults answers a share of resource requests with an error instead of serving them.
// Shares are between 0 and 1 and are drawn from a generator seeded with Seed, so a run
// is repeatable for a given order of requests.
type Faults struct {
	Seed            uint64
	TooManyRequests float64 // 429
	InternalError   float64 // 500
	Timeout         float64 // held for TimeoutAfter, then 504 with reason Timeout
	TimeoutAfter    time.Duration
	// LostResponse: the request is served, then answered 504 as if the response was
	// lost on the way: the client cannot tell whether its write happened.
	LostResponse float64
	// Only, when set, limits faults to the requests it accepts (a broken resource).
	Only func(method, path string) bool

	once     sync.Once
	mu       sync.Mutex
	rng      *rand.Rand
	injected atomic.Int64
}

// Injected returns how many faults have been injected.
func (f *Faults) Injected() int64 { return f.injected.Load() }

// inject answers the request with a fault, or returns false to have it served. For a
// lost response it returns true after serve has run against a discarded response.
func (f *Faults) inject(w http.ResponseWriter, r *http.Request, done <-chan struct{}, serve func(http.ResponseWriter)) bool {
	if f.Only != nil && !f.Only(r.Method, r.URL.Path) {
		return false
	}
	f.once.Do(func() { f.rng = rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15)) })
	f.mu.Lock()
	x := f.rng.Float64()
	f.mu.Unlock()
	switch {
	case x < f.TooManyRequests:
		f.injected.Add(1)
		writeStatus(w, apierrors.NewTooManyRequests("memcluster: injected fault", 0))
	case x < f.TooManyRequests+f.InternalError:
		f.injected.Add(1)
		writeStatus(w, apierrors.NewInternalError(errInjected))
	case x < f.TooManyRequests+f.InternalError+f.Timeout:
		f.injected.Add(1)
		wait := f.TimeoutAfter
		if wait <= 0 {
			wait = time.Second
		}
		select {
		case <-time.After(wait):
		case <-r.Context().Done():
		case <-done:
		}
		writeStatus(w, apierrors.NewServerTimeout(schema.GroupResource{}, r.Method, 0))
	case x < f.TooManyRequests+f.InternalError+f.Timeout+f.LostResponse:
		f.injected.Add(1)
		serve(discard{header: http.Header{}})
		writeStatus(w, apierrors.NewServerTimeout(schema.GroupResource{}, r.Method, 0))
	default:
		return false
	}
	return true
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(p []byte) (int, error) { return len(p), nil }
func (d discard) WriteHeader(int)             {}

var errInjected = injectedError{}

type injectedError struct{}

func (injectedError) Error() string { return "memcluster: injected fault" }

// FixedLatency returns a latency of d for every request.
func FixedLatency(d time.Duration) func() time.Duration { return func() time.Duration { return d } }

// UniformLatency returns latencies drawn uniformly from [lo, hi) by a generator seeded
// with seed.
func UniformLatency(seed uint64, lo, hi time.Duration) func() time.Duration {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, seed+1))
	return func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
}
