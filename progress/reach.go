package progress

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// Reachability watches the requests a client sends, for the progress line: since when
// the server has not answered, and why. A restore retries what does not reach the
// server for as long as each object's time allows; the line says that is what it is
// doing, so that a person sees a server away, not a restore stuck.
type Reachability struct {
	mu    sync.Mutex
	since time.Time // the first failure since the last answer; zero while it answers
	last  error
}

// Wrap is a rest.Config's WrapTransport: it watches what goes through rt.
func (r *Reachability) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		r.record(err)
		return resp, err
	})
}

// record takes one request's outcome: any response is an answer; a failure to connect,
// send or read is not (a cancelled request tells nothing of the server).
func (r *Reachability) record(err error) {
	var oe *net.OpError
	answered := err == nil
	if !answered && !errors.As(err, &oe) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case answered:
		r.since, r.last = time.Time{}, nil
	case r.since.IsZero():
		r.since, r.last = time.Now(), err
	default:
		r.last = err
	}
}

// Down says since when the server has not answered, and the last failure; ok is false
// while it answers.
func (r *Reachability) Down() (since time.Time, last error, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.since, r.last, !r.since.IsZero()
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
