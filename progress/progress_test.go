package progress

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	p := &Line{w: &buf, total: 300, done: 100, running: 4, failed: 1, start: time.Now().Add(-10 * time.Second)}
	p.draw(false)
	line := strings.TrimSpace(buf.String())
	// 100 done in 10 s is 10/s; 200 to go takes 20 s.
	assert.Equal(t, "100/300 done, 4 running, 1 failed, 10/s, ETA 20s", line)
}

func TestProgressLineSaysWhenTheClientThrottles(t *testing.T) {
	var buf bytes.Buffer
	waited := 1500 * time.Millisecond
	p := &Line{w: &buf, total: 300, done: 100, start: time.Now().Add(-10 * time.Second),
		Throttle: func() time.Duration { return waited }}
	p.draw(false)
	assert.Contains(t, buf.String(), "client-side throttling: requests waited 1.5s in the last 10s (raise --client-qps)")
	buf.Reset()
	p.draw(false)
	assert.NotContains(t, buf.String(), "throttling", "no more waiting since the last line")
}

func TestMeteredLimiterCountsWaiting(t *testing.T) {
	l := NewLimiter(20, 1) // one request at once, then one every 50ms
	for range 3 {
		l.Accept()
	}
	assert.GreaterOrEqual(t, l.Waited(), 80*time.Millisecond, "the second and third request waited about 50ms each")
}

// Requests that find a token at once are not throttled: however many there are, the
// progress line does not ask to raise --client-qps.
func TestNoThrottlingWithoutWaiting(t *testing.T) {
	l := NewLimiter(1e6, 1e6)
	for range 10000 {
		l.Accept()
	}
	assert.Zero(t, l.Waited(), "no request waited for a token")
	var buf bytes.Buffer
	p := &Line{w: &buf, total: 300, done: 100, start: time.Now().Add(-10 * time.Second),
		Throttle: func() time.Duration { return 400 * time.Microsecond }}
	p.draw(false)
	assert.NotContains(t, buf.String(), "throttling", "less than a millisecond is no wait")
}

// While the API server does not answer, the line says so, for how long and why, and
// that the restore is retrying; once it answers again, the line stops saying it.
func TestProgressLineSaysTheServerIsAway(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	var reach Reachability
	client := &http.Client{Transport: reach.Wrap(http.DefaultTransport)}
	_, err = client.Get("http://" + addr + "/api")
	require.Error(t, err)
	reach.mu.Lock()
	reach.since = reach.since.Add(-7 * time.Second) // refused for 7 s by now
	reach.mu.Unlock()

	var buf bytes.Buffer
	p := &Line{w: &buf, total: 300, done: 100, start: time.Now().Add(-10 * time.Second), Reach: &reach}
	p.draw(false)
	assert.Contains(t, buf.String(), "the API server has not answered for 7s (connection refused): retrying within --item-timeout")

	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer up.Close()
	resp, err := client.Get(up.URL)
	require.NoError(t, err)
	resp.Body.Close()
	buf.Reset()
	p.draw(false)
	assert.NotContains(t, buf.String(), "not answered", "an answer, even an error, is the server there")
}
