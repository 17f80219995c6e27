package memcluster

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

var (
	nsGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	cmGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

func start(t *testing.T, opts Options) (*Server, dynamic.Interface) {
	t.Helper()
	s, err := StartServer(opts)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	c, err := dynamic.NewForConfig(s.Config())
	require.NoError(t, err)
	_, err = c.Resource(nsGVR).Create(context.Background(), u("v1", "Namespace", "", "ns", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	return s, c
}

func TestFaultsAreInjected(t *testing.T) {
	f := &Faults{Seed: 1, TooManyRequests: 0.2, InternalError: 0.2, Timeout: 0.1, TimeoutAfter: time.Millisecond}
	s, err := StartServer(Options{Faults: f})
	require.NoError(t, err)
	defer s.Close()
	c, _ := dynamic.NewForConfig(s.Config())
	counts := map[string]int{}
	for i := range 200 {
		_, err := c.Resource(nsGVR).Get(context.Background(), fmt.Sprint("n", i), metav1.GetOptions{})
		switch {
		case apierrors.IsTooManyRequests(err):
			counts["429"]++
		case apierrors.IsInternalError(err):
			counts["500"]++
		case apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err):
			counts["timeout"]++
		case apierrors.IsNotFound(err):
			counts["served"]++
		default:
			t.Fatalf("unexpected %v", err)
		}
	}
	assert.InDelta(t, 40, counts["429"], 20)
	assert.InDelta(t, 40, counts["500"], 20)
	assert.InDelta(t, 20, counts["timeout"], 15)
	assert.EqualValues(t, 200-counts["served"], f.Injected())
}

func TestLostResponse(t *testing.T) {
	s, c := start(t, Options{})
	s.opts.Faults = &Faults{Seed: 2, LostResponse: 1}
	_, err := c.Resource(cmGVR).Namespace("ns").Create(context.Background(), u("v1", "ConfigMap", "ns", "lost", nil), metav1.CreateOptions{})
	assert.True(t, apierrors.IsServerTimeout(err), "%v", err)
	s.opts.Faults = nil
	_, err = c.Resource(cmGVR).Namespace("ns").Get(context.Background(), "lost", metav1.GetOptions{})
	assert.NoError(t, err, "the create happened although its response was lost")
}

func TestLatencyIsInjected(t *testing.T) {
	s, err := StartServer(Options{Latency: FixedLatency(20 * time.Millisecond)})
	require.NoError(t, err)
	defer s.Close()
	c, _ := dynamic.NewForConfig(s.Config())
	start := time.Now()
	_, err = c.Resource(nsGVR).Get(context.Background(), "x", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)

	l := UniformLatency(3, time.Millisecond, 3*time.Millisecond)
	for range 100 {
		d := l()
		assert.True(t, d >= time.Millisecond && d <= 3*time.Millisecond, d)
	}
}

func TestWatchResumesFromHistory(t *testing.T) {
	_, c := start(t, Options{History: 3})
	ctx := context.Background()
	cms := c.Resource(cmGVR).Namespace("ns")
	first, err := cms.Create(ctx, u("v1", "ConfigMap", "ns", "a", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cms.Create(ctx, u("v1", "ConfigMap", "ns", "b", nil), metav1.CreateOptions{})
	require.NoError(t, err)

	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.GetResourceVersion()})
	require.NoError(t, err)
	ev := <-w.ResultChan()
	assert.Equal(t, watch.Added, ev.Type)
	assert.Equal(t, "b", metaName(ev), "only what came after the version asked for")
	w.Stop()

	for _, n := range []string{"c", "d", "e", "f"} {
		_, err = cms.Create(ctx, u("v1", "ConfigMap", "ns", n, nil), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	w, err = cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.GetResourceVersion()})
	require.NoError(t, err)
	ev = <-w.ResultChan()
	assert.Equal(t, watch.Error, ev.Type)
	assert.True(t, apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) || apierrors.IsGone(apierrors.FromObject(ev.Object)))
	w.Stop()
}

func metaName(ev watch.Event) string {
	m, _ := ev.Object.(interface{ GetName() string })
	return m.GetName()
}

func TestTerminatingNamespaceRefusesContent(t *testing.T) {
	s, c := start(t, Options{})
	ctx := context.Background()
	s.mu.Lock() // hold the namespace controller back
	k := key{gr: schema.GroupResource{Resource: "namespaces"}, name: "ns"}
	req := &request{rt: s.types[k.gr], version: "v1", name: "ns"}
	st, _ := s.objects.get(k)
	s.remove(req, k, st)
	s.mu.Unlock()
	_, err := c.Resource(cmGVR).Namespace("ns").Create(ctx, u("v1", "ConfigMap", "ns", "late", nil), metav1.CreateOptions{})
	assert.True(t, apierrors.IsForbidden(err) || apierrors.IsNotFound(err), "%v", err)
}

func TestUnsupportedPatchAndStatus(t *testing.T) {
	_, c := start(t, Options{})
	ctx := context.Background()
	deps := c.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("ns")
	d, err := deps.Create(ctx, u("apps/v1", "Deployment", "ns", "web", map[string]any{"spec": map[string]any{"replicas": int64(1)}, "status": map[string]any{"replicas": int64(9)}}), metav1.CreateOptions{})
	require.NoError(t, err)
	_, has := d.Object["status"]
	assert.False(t, has, "create drops the status of a kind with a status subresource")
	_, err = deps.Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{}`), metav1.PatchOptions{})
	assert.True(t, apierrors.IsUnsupportedMediaType(err), "%v", err)
	d.Object["status"] = map[string]any{"replicas": int64(1)}
	d, err = deps.UpdateStatus(ctx, d, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 1, d.Object["status"].(map[string]any)["replicas"])
}

func TestBadRequests(t *testing.T) {
	_, c := start(t, Options{})
	ctx := context.Background()
	cms := c.Resource(cmGVR).Namespace("ns")
	_, err := cms.Create(ctx, u("v1", "Secret", "ns", "x", nil), metav1.CreateOptions{})
	assert.True(t, apierrors.IsBadRequest(err), "wrong kind: %v", err)
	_, err = cms.Create(ctx, u("v1", "ConfigMap", "other", "x", nil), metav1.CreateOptions{})
	assert.True(t, apierrors.IsBadRequest(err), "namespace mismatch: %v", err)
	_, err = c.Resource(nsGVR).Create(ctx, u("v1", "Namespace", "", "Not_A_Label", nil), metav1.CreateOptions{})
	assert.True(t, apierrors.IsInvalid(err), "%v", err)
}

// BenchmarkCreate measures creates per second through client-go's dynamic client,
// with no injected latency, at 1 and 16 concurrent clients, and the heap the server
// keeps per object created (a ConfigMap with three labels and 1 KiB of data): over
// loopback (Config), and in process (InProcessConfig).
func BenchmarkCreate(b *testing.B) {
	for _, transport := range []struct {
		prefix string
		config func(*Server) *rest.Config
	}{{"", (*Server).Config}, {"in-process-", (*Server).InProcessConfig}} {
		for _, clients := range []int{1, 16} {
			benchmarkCreate(b, transport.prefix, transport.config, clients, false)
		}
	}
	// The JSON in a data file, where the heap keeps the record alone.
	benchmarkCreate(b, "in-process-", (*Server).InProcessConfig, 16, true)
}

func benchmarkCreate(b *testing.B, prefix string, config func(*Server) *rest.Config, clients int, dataFile bool) {
	name := fmt.Sprintf("%sclients=%d", prefix, clients)
	var opts Options
	if dataFile {
		name += ",data-file"
		opts.DataDir = b.TempDir()
	}
	b.Run(name, func(b *testing.B) {
		s, err := StartServer(opts)
		require.NoError(b, err)
		defer s.Close()
		c, _ := dynamic.NewForConfig(config(s))
		ctx := context.Background()
		_, err = c.Resource(nsGVR).Create(ctx, u("v1", "Namespace", "", "ns", nil), metav1.CreateOptions{})
		require.NoError(b, err)
		cms := c.Resource(cmGVR).Namespace("ns")
		var next sync.Mutex
		i := 0
		value := strings.Repeat("x", 1024)
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		b.ResetTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					next.Lock()
					n := i
					i++
					next.Unlock()
					if n >= b.N {
						return
					}
					cm := u("v1", "ConfigMap", "ns", fmt.Sprint("cm-", n), map[string]any{"data": map[string]any{"k": value}})
					cm.SetLabels(map[string]string{"app": "shop", "tier": "web", "release": fmt.Sprint("r", n%10)})
					if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "creates/s")
		b.StopTimer()
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "heap-B/object")
		runtime.KeepAlive(s)
	})
}

// Cluster IPs come from the range until it is full; a deleted Service's address and
// node port are free again, and the search for the next address goes on after the last
// one given.
func TestServiceAllocations(t *testing.T) {
	_, c := start(t, Options{ServiceCIDR: "10.1.0.0/29"}) // .1 to .6: .0 is the network, .7 broadcast
	svcs := c.Resource(schema.GroupVersionResource{Version: "v1", Resource: "services"}).Namespace("ns")
	ctx := context.Background()
	create := func(name string, spec map[string]any) (string, error) {
		o, err := svcs.Create(ctx, u("v1", "Service", "ns", name, map[string]any{"spec": spec}), metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		ip, _, _ := unstructured.NestedString(o.Object, "spec", "clusterIP")
		return ip, nil
	}
	port := map[string]any{"port": int64(80)}
	var ips []string
	for i := range 5 {
		ip, err := create(fmt.Sprint("s", i), map[string]any{"ports": []any{port}})
		require.NoError(t, err)
		ips = append(ips, ip)
	}
	assert.Equal(t, []string{"10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4", "10.1.0.5"}, ips)
	np, err := create("np", map[string]any{"type": "NodePort", "ports": []any{map[string]any{"port": int64(80), "nodePort": int64(30080)}}})
	require.NoError(t, err)
	assert.Equal(t, "10.1.0.6", np)
	_, err = create("full", map[string]any{"ports": []any{port}})
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.ErrorContains(t, err, "range is full")

	require.NoError(t, svcs.Delete(ctx, "s2", metav1.DeleteOptions{}))
	require.NoError(t, svcs.Delete(ctx, "np", metav1.DeleteOptions{}))
	ip, err := create("again", map[string]any{"ports": []any{port}})
	require.NoError(t, err)
	assert.Equal(t, "10.1.0.3", ip, "the search goes on after the last address given (.6), wraps, and finds the freed one")
	ip, err = create("reused", map[string]any{"type": "NodePort", "ports": []any{map[string]any{"port": int64(80), "nodePort": int64(30080)}}})
	require.NoError(t, err, "a deleted Service's node port is free again")
	assert.Equal(t, "10.1.0.6", ip, "and its address")
	_, err = create("taken", map[string]any{"clusterIP": "10.1.0.1", "ports": []any{port}})
	assert.ErrorContains(t, err, "provided IP is already allocated")
}

// A range of IPv6 gives its addresses as one of IPv4 does, past the first words of the
// bitmap and across a byte of the address; a range larger than kube-apiserver takes is
// refused, naming the bound.
func TestServiceRanges(t *testing.T) {
	_, c := start(t, Options{ServiceCIDR: "fd00:10::/118"}) // 1,024 addresses: ::1 to ::3fe
	svcs := c.Resource(schema.GroupVersionResource{Version: "v1", Resource: "services"}).Namespace("ns")
	ctx := context.Background()
	seen := map[string]bool{}
	for i := range 300 {
		o, err := svcs.Create(ctx, u("v1", "Service", "ns", fmt.Sprint("s", i), map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}}), metav1.CreateOptions{})
		require.NoError(t, err)
		ip, _, _ := unstructured.NestedString(o.Object, "spec", "clusterIP")
		want := netip.MustParseAddr("fd00:10::")
		for range i + 1 {
			want = want.Next()
		}
		require.Equal(t, want.String(), ip, "service %d", i)
		seen[ip] = true
	}
	require.Len(t, seen, 300)
	require.NoError(t, svcs.Delete(ctx, "s70", metav1.DeleteOptions{}))
	_, err := svcs.Create(ctx, u("v1", "Service", "ns", "taken", map[string]any{"spec": map[string]any{"clusterIP": "fd00:10::12c", "ports": []any{map[string]any{"port": int64(80)}}}}), metav1.CreateOptions{})
	assert.ErrorContains(t, err, "provided IP is already allocated", "::12c is the 300th")
	o, err := svcs.Create(ctx, u("v1", "Service", "ns", "again", map[string]any{"spec": map[string]any{"clusterIP": "fd00:10::47", "ports": []any{map[string]any{"port": int64(80)}}}}), metav1.CreateOptions{})
	require.NoError(t, err, "s70's address is free again")
	ip, _, _ := unstructured.NestedString(o.Object, "spec", "clusterIP")
	assert.Equal(t, "fd00:10::47", ip)

	for cidr, bound := range map[string]string{"10.0.0.0/11": "/12", "fd00::/107": "/108"} {
		_, err := StartServer(Options{ServiceCIDR: cidr})
		require.Error(t, err, cidr)
		assert.ErrorContains(t, err, "too large", cidr)
		assert.ErrorContains(t, err, bound, cidr)
	}
	s, err := StartServer(Options{ServiceCIDR: "10.96.0.0/12"})
	require.NoError(t, err, "the largest range kube-apiserver takes")
	s.Close()
}

// BenchmarkCreateServices creates Services through Server.Create, each given a cluster
// IP from a /12, and reports the heap the server keeps a Service: its record, its JSON
// (with store=data-file, in the file instead) and what its allocations hold.
func BenchmarkCreateServices(b *testing.B) {
	b.Run("store=memory", func(b *testing.B) { benchmarkCreateServices(b, Options{ServiceCIDR: "10.96.0.0/12"}) })
	b.Run("store=data-file", func(b *testing.B) {
		benchmarkCreateServices(b, Options{ServiceCIDR: "10.96.0.0/12", DataDir: b.TempDir()})
	})
}

func benchmarkCreateServices(b *testing.B, opts Options) {
	s, err := StartServer(opts)
	require.NoError(b, err)
	defer s.Close()
	ctx := context.Background()
	require.NoError(b, s.Create(ctx, nsGVR, "", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns"}}))
	svcGVR := schema.GroupVersionResource{Version: "v1", Resource: "services"}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	i := 0
	for b.Loop() {
		obj := map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": fmt.Sprintf("svc-%07d", i), "namespace": "ns"},
			"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}}
		require.NoError(b, s.Create(ctx, svcGVR, "ns", obj))
		i++
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "heap-B/object")
	runtime.KeepAlive(s)
}
