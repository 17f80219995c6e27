package graph

import (
	"bytes"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/manifest"
	"k8s.io/apimachinery/pkg/types"
)

// appManifest makes n objects shaped like applications: namespaces of 100 objects, in
// each Deployments owning ReplicaSets owning Pods, and ConfigMaps. Every object but the
// namespaces has a namespace edge, and most an owner edge: about 2 edges per object.
// The manifest is encoded and decoded again, so that its strings lie in memory as
// they do in a manifest restoregraph reads (its decoders share each namespace's name
// and pack the rest into slabs in the order read), not one allocation each.
func appManifest(n int) *manifest.Manifest {
	m := manifest.New(n)
	uid := func(i int) types.UID { return types.UID(fmt.Sprintf("%08x-0000-4000-8000-000000000000", i)) }
	namespace := &manifest.Type{Version: "v1", Kind: "Namespace", Resource: "namespaces"}
	deployment := &manifest.Type{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments"}
	replicaSet := &manifest.Type{Group: "apps", Version: "v1", Kind: "ReplicaSet", Resource: "replicasets"}
	pod := &manifest.Type{Version: "v1", Kind: "Pod", Resource: "pods"}
	configMap := &manifest.Type{Version: "v1", Kind: "ConfigMap", Resource: "configmaps"}
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("ns-%05d", i/100)
		it := &manifest.Item{Namespace: ns, Name: fmt.Sprintf("obj-%08d", i), UID: uid(i)}
		switch {
		case i%100 == 0:
			it.Type, it.Namespace, it.Name = namespace, "", ns
		case i%4 == 1:
			it.Type = deployment
		case i%4 == 2:
			it.Type, it.OwnerUIDs = replicaSet, []types.UID{uid(i - 1)}
		case i%4 == 3:
			it.Type, it.OwnerUIDs = pod, []types.UID{uid(i - 1)}
		default:
			it.Type, it.OwnerUIDs = configMap, []types.UID{uid(i - 3)}
		}
		m.Add(it)
	}
	var buf bytes.Buffer
	if err := manifest.Encode(&buf, m); err != nil {
		panic(err)
	}
	m, err := manifest.Decode(&buf)
	if err != nil {
		panic(err)
	}
	m.Items() // sort outside the measurement
	return m
}

// BenchmarkBuildSortLongestPath measures what the scheduler needs before it starts:
// build the graph, order it, and compute every node's longest remaining path.
func BenchmarkBuildSortLongestPath(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		m := appManifest(n)
		m.Items() // the manifest sorts its items once, on first use: its cost, not the graph's
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			var g *Graph
			var peak uint64
			for b.Loop() {
				b.StopTimer() // a collection over the manifest's heap is not the graph's cost
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				b.StartTimer()
				var err error
				g, err = New(m, Options{})
				if err != nil {
					b.Fatal(err)
				}
				_ = g.LongestRemaining(nil)
				b.StopTimer()
				runtime.ReadMemStats(&after)
				peak = after.TotalAlloc - before.TotalAlloc
				b.StartTimer()
			}
			b.ReportMetric(float64(g.EdgeCount())/float64(n), "edges/item")
			b.ReportMetric(float64(peak)/(1<<20), "alloc-MiB")
			b.ReportMetric(float64(peak)/float64(n), "alloc-B/item")
		})
	}
}

// BenchmarkLongestRemaining is the last stage of BenchmarkBuildSortLongestPath alone:
// every node's longest remaining path over the built graph, as a restore weighs its
// nodes before it starts.
func BenchmarkLongestRemaining(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		g, err := New(appManifest(n), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			var lr []float64
			for b.Loop() {
				lr = g.LongestRemaining(nil)
			}
			if len(lr) != n || lr[0] < 1 {
				b.Fatalf("%d paths, the first %v", len(lr), lr[0])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
		})
	}
}

// BenchmarkUIDMap is the part of BenchmarkBuildSortLongestPath that does not scale
// linearly, alone: a Go map from every item's UID to its position, and a lookup of
// every owner UID, over the same manifests. Compare its cost at 1M and 100k items with
// the whole build's.
func BenchmarkUIDMap(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		m := appManifest(n)
		items := m.Items()
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			found := 0
			for b.Loop() {
				byUID := make(map[types.UID]int32, len(items))
				for i, it := range items {
					byUID[it.UID] = int32(i)
				}
				found = 0
				for _, it := range items {
					for _, uid := range it.OwnerUIDs {
						if _, ok := byUID[uid]; ok {
							found++
						}
					}
				}
			}
			if found == 0 {
				b.Fatal("no owner found")
			}
		})
	}
}

// BenchmarkBuildScaling builds, orders and computes the longest remaining paths of the
// 100k- and the million-item manifests of BenchmarkBuildSortLongestPath one after the
// other in every iteration, so that both sizes meet the same state of the machine, and
// reports the ratio of their total times: 10 when the build is linear in the items.
// ns/op is one iteration, both builds.
//
// The pages a build writes are the other half of that state, and each sub-benchmark
// gives both sizes the same:
//   - memory=fresh returns every free page to the system before each build
//     (debug.FreeOSMemory), so that each size maps in every page it writes, as a
//     restore's build does when its heap grows to hold the graph;
//   - memory=reused only collects (runtime.GC), and each build takes the free pages the
//     runtime has kept. The runtime's scavenger gives back some of the pages a
//     million-item graph leaves free, and next to none of a 100k graph's: the
//     million's build maps thousands of pages in again and the 100k's one or two, and
//     the ratio counts that as the graph's cost.
//
// faults/100k and faults/1M are the pages a build mapped in (minor page faults).
func BenchmarkBuildScaling(b *testing.B) {
	small, large := appManifest(100_000), appManifest(1_000_000)
	for _, c := range []struct {
		memory  string
		prepare func()
	}{
		{"fresh", debug.FreeOSMemory},
		{"reused", runtime.GC},
	} {
		b.Run("memory="+c.memory, func(b *testing.B) {
			counted := true
			build := func(m *manifest.Manifest, faults *int64) time.Duration {
				c.prepare() // a collection over the manifests' heap is not the graph's cost
				before, ok := pageFaults()
				start := time.Now()
				g, err := New(m, Options{})
				if err != nil {
					b.Fatal(err)
				}
				_ = g.LongestRemaining(nil)
				took := time.Since(start)
				after, _ := pageFaults()
				*faults += after - before
				counted = counted && ok
				return took
			}
			var tSmall, tLarge time.Duration
			var fSmall, fLarge int64
			for b.Loop() {
				tSmall += build(small, &fSmall)
				tLarge += build(large, &fLarge)
			}
			b.ReportMetric(float64(tSmall.Nanoseconds())/float64(b.N), "ns/100k")
			b.ReportMetric(float64(tLarge.Nanoseconds())/float64(b.N), "ns/1M")
			b.ReportMetric(tLarge.Seconds()/tSmall.Seconds(), "1M/100k")
			if counted {
				b.ReportMetric(float64(fSmall)/float64(b.N), "faults/100k")
				b.ReportMetric(float64(fLarge)/float64(b.N), "faults/1M")
			}
		})
	}
}

// BenchmarkOwnersOfOneObject builds the graph of one object that lists n owners, in the
// reverse of the items' order, beside those owners: its list of predecessors is sorted
// once, so the build is n log n in them, not n².
func BenchmarkOwnersOfOneObject(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		m := manifest.New(n + 1)
		cm := &manifest.Type{Version: "v1", Kind: "ConfigMap", Resource: "configmaps"}
		dependent := &manifest.Item{Type: cm, Namespace: "a", Name: "dependent", UID: "dependent"}
		for i := range n {
			uid := types.UID(fmt.Sprintf("owner-%07d", i))
			m.Add(&manifest.Item{Type: cm, Namespace: "a", Name: string(uid), UID: uid})
			dependent.OwnerUIDs = append(dependent.OwnerUIDs, types.UID(fmt.Sprintf("owner-%07d", n-1-i)))
		}
		if _, err := m.Add(dependent); err != nil {
			b.Fatal(err)
		}
		m.Items()
		buildEach(b, fmt.Sprintf("owners=%d", n), m, n, "ns/owner")
	}
}

// buildEach runs sub-benchmark name: the graph of m, whose n edges it checks, built
// again in each iteration, reported as time per edge in unit.
func buildEach(b *testing.B, name string, m *manifest.Manifest, n int, unit string) {
	b.Run(name, func(b *testing.B) {
		for b.Loop() {
			g, err := New(m, Options{})
			if err != nil || g.EdgeCount() != n {
				b.Fatal(err, g.EdgeCount())
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), unit)
	})
}

// BenchmarkDependsOnOfOneObject builds the graph of one object whose depends-on
// annotation names n objects, the last first, beside those objects.
func BenchmarkDependsOnOfOneObject(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		m := manifest.New(n + 1)
		cm := &manifest.Type{Version: "v1", Kind: "ConfigMap", Resource: "configmaps"}
		refs := make([]string, n)
		for i := range n {
			name := fmt.Sprintf("c-%07d", i)
			m.Add(&manifest.Item{Type: cm, Namespace: "a", Name: name, UID: types.UID("uid-" + name)})
			refs[n-1-i] = "/namespaces/a/ConfigMap/" + name
		}
		thing := &manifest.Type{Group: "example.io", Version: "v1", Kind: "Thing", Resource: "things"}
		if _, err := m.Add(&manifest.Item{Type: thing, Namespace: "a", Name: "dependent", UID: "dependent",
			Annotations: manifest.Pairs{{Key: DependsOnAnnotation, Value: strings.Join(refs, ",")}}}); err != nil {
			b.Fatal(err)
		}
		m.Items()
		buildEach(b, fmt.Sprintf("depends-on=%d", n), m, n, "ns/reference")
	}
}
