package test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/restoregraph/restoregraph/test/harness"
)

// cuttingProxy stands between a client and an S3 server: the first GET of an object
// whose key ends in suffix is cut off after after bytes of its body, as a network that
// drops a connection does; every other request passes. gets lists the GETs of such
// objects, each with its Range header.
type cuttingProxy struct {
	URL string
	mu  sync.Mutex
	got []string
}

func newCuttingProxy(t *testing.T, endpoint, suffix string, after int64) *cuttingProxy {
	t.Helper()
	target, err := url.Parse(endpoint)
	require.NoError(t, err)
	p := &cuttingProxy{}
	rp := httputil.NewSingleHostReverseProxy(target) // keeps the Host the client signed
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, suffix) {
			rp.ServeHTTP(w, r)
			return
		}
		p.mu.Lock()
		p.got = append(p.got, "GET "+r.Header.Get("Range"))
		first := len(p.got) == 1
		p.mu.Unlock()
		if !first {
			rp.ServeHTTP(w, r)
			return
		}
		rp.ServeHTTP(&cutWriter{ResponseWriter: w, left: after}, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func (p *cuttingProxy) gets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.got...)
}

// cutWriter passes left bytes of a body on and then drops the connection.
type cutWriter struct {
	http.ResponseWriter
	left int64
}

func (w *cutWriter) Write(b []byte) (int, error) {
	if int64(len(b)) > w.left {
		w.ResponseWriter.Write(b[:w.left])
		w.ResponseWriter.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection is closed mid-body
	}
	w.left -= int64(len(b))
	return w.ResponseWriter.Write(b)
}

var _ io.Writer = (*cutWriter)(nil)

// s3Env is the environment a command reaches s in by URL: s's credentials and region,
// and nothing from this machine (no shared files, no instance metadata). It is given to
// the commands a test runs, never set in the test's own process, so that tests with S3
// servers of their own run side by side.
func s3Env(t testing.TB, s *harness.S3) []string {
	none := filepath.Join(t.TempDir(), "none")
	return []string{"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.SecretKey, "AWS_REGION=" + s.Region,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=" + none, "AWS_SHARED_CREDENTIALS_FILE=" + none}
}

// withoutCredentials is env with no AWS credentials: what a command finds where only a
// Velero location's own credentials may reach its bucket.
func withoutCredentials(env []string) []string {
	return append(slices.Clone(env), "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=")
}

func fileSize(t testing.TB, path string) int64 {
	st, err := os.Stat(path)
	require.NoError(t, err)
	return st.Size()
}
