package test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const admissionChildEnv = "RESTOREGRAPH_ADMISSION_CHILD"

func configmapIDs(ns string, n int) []manifest.ID {
	out := make([]manifest.ID, n)
	for i := range out {
		out[i] = manifest.ID{Resource: "configmaps", Namespace: ns, Name: fmt.Sprintf("cm-%05d", i)}
	}
	return out
}

// runAdmissionChild admits an operation that writes the ConfigMaps of namespace
// "held", says so, and holds it until killed.
func runAdmissionChild() int {
	c := &rest.Config{Host: os.Getenv("CHILD_HOST"), BearerToken: os.Getenv("CHILD_TOKEN"), TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	adm := &admission.Cluster{Client: cs, Holder: "child", LeaseDuration: 3 * time.Second}
	if _, err := adm.Admit(context.Background(), admission.Operation{ID: "child-restore", Kind: "restore",
		Writes: manifest.NewSet(configmapIDs("held", 1000)...)}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("admitted")
	select {}
}

func admissionClient(t testing.TB, requests *atomic.Int64) kubernetes.Interface {
	c := cfg()
	c.QPS, c.Burst = -1, 0
	if requests != nil {
		c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) { requests.Add(1); return rt.RoundTrip(r) })
		}
	}
	cs, err := kubernetes.NewForConfig(c)
	require.NoError(t, err)
	return cs
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestClusterAdmissionAcrossProcesses: another process holds an operation; a disjoint
// one runs at once, an overlapping one waits, and runs once the holder is SIGKILLed and
// its Lease expires. Nothing is left behind.
func TestClusterAdmissionAcrossProcesses(t *testing.T) {
	child := exec.Command(os.Args[0], "-test.run=^$")
	c := cfg()
	child.Env = append(os.Environ(), admissionChildEnv+"=1", "CHILD_HOST="+c.Host, "CHILD_TOKEN="+c.BearerToken)
	child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	child.Stderr = os.Stderr
	require.NoError(t, child.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "admitted\n", line)

	cs := admissionClient(t, nil)
	adm := &admission.Cluster{Client: cs, Holder: "parent", LeaseDuration: 3 * time.Second, Poll: 100 * time.Millisecond}
	ctx := context.Background()
	release, conflicts, err := adm.TryAdmit(ctx, admission.Operation{ID: "disjoint", Kind: "restore", Writes: manifest.NewSet(configmapIDs("elsewhere", 1000)...)})
	require.NoError(t, err)
	require.Empty(t, conflicts)
	release()

	overlapping := admission.Operation{ID: "overlapping", Kind: "restore", Writes: manifest.NewSet(configmapIDs("held", 10)...)}
	_, conflicts, err = adm.TryAdmit(ctx, overlapping)
	require.NoError(t, err)
	require.Len(t, conflicts, 1)
	assert.Equal(t, "child-restore", conflicts[0].ID)
	assert.True(t, conflicts[0].Running)
	assert.Equal(t, 10, conflicts[0].Shared)

	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	child.Wait()
	start := time.Now()
	release, err = adm.Admit(ctx, overlapping)
	require.NoError(t, err)
	t.Logf("admitted %s after the holder was killed", time.Since(start).Round(100*time.Millisecond))
	release()

	leases, err := cs.CoordinationV1().Leases("restoregraph-admission").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, leases.Items, "the records are cleaned up: the killed holder's by whoever saw it expired")
	keys, err := cs.CoreV1().ConfigMaps("restoregraph-admission").List(ctx, metav1.ListOptions{LabelSelector: "restoregraph.dev/admission"})
	require.NoError(t, err)
	assert.Empty(t, keys.Items)
}

// BenchmarkIntegrationAdmission: 100 operations of 1,000 objects each run on the real
// API server; how long admitting one more takes, and how many requests, when it shares
// no namespace with them (the coarse summaries rule them out) and when it shares one
// namespace with every one (their keys are read, once, then merged).
func BenchmarkIntegrationAdmission(b *testing.B) {
	ctx := context.Background()
	var requests atomic.Int64
	cs := admissionClient(b, &requests)
	holder := &admission.Cluster{Client: cs, Holder: "bench-holders", Namespace: "bench-admission"}
	var releases []func()
	for i := range 100 {
		ids := append(configmapIDs(fmt.Sprintf("bench-%03d", i), 999), manifest.ID{Resource: "configmaps", Namespace: "shared", Name: fmt.Sprint(i)})
		r, err := holder.Admit(ctx, admission.Operation{ID: fmt.Sprint(i), Kind: "restore", Writes: manifest.NewSet(ids...)})
		if err != nil {
			b.Fatal(err)
		}
		releases = append(releases, r)
	}
	defer func() {
		for _, r := range releases {
			r()
		}
	}()
	for _, tc := range []struct {
		name string
		ids  []manifest.ID
	}{
		{"disjoint", configmapIDs("bench-new", 1000)},
		{"sharing-a-namespace", append(configmapIDs("shared-other", 999), manifest.ID{Resource: "configmaps", Namespace: "shared", Name: "new"})},
	} {
		b.Run(tc.name, func(b *testing.B) {
			adm := &admission.Cluster{Client: cs, Holder: "bench", Namespace: "bench-admission"}
			op := admission.Operation{ID: "incoming", Kind: "restore", Writes: manifest.NewSet(tc.ids...)}
			requests.Store(0)
			for b.Loop() {
				release, conflicts, err := adm.TryAdmit(ctx, op)
				if err != nil || len(conflicts) > 0 {
					b.Fatal(err, conflicts)
				}
				release()
			}
			b.ReportMetric(float64(requests.Load())/float64(b.N), "requests/op")
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
		})
	}
}
