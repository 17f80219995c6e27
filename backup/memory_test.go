//go:build !race

// The memory bound is measured without the race detector, which checks nothing here and
// makes a 100,000-object backup take minutes: make unit runs this file in a go test of
// its own.

package backup

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/memcluster"
)

// generated lists count ConfigMaps of size bytes each, made as they are listed, in
// pages, so that the test holds none of them: what memory the backup takes is its own.
func generated(count, size int) listFunc {
	return func(_ context.Context, _ string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
		from, _ := strconv.Atoi(opts.Continue)
		to := min(count, from+int(opts.Limit))
		if opts.Limit == 0 {
			to = count
		}
		l := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMapList"}}
		payload := strings.Repeat("x", size)
		for i := from; i < to; i++ {
			l.Items = append(l.Items, unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": fmt.Sprintf("cm-%07d", i), "namespace": fmt.Sprintf("ns-%03d", i%100),
					"uid": fmt.Sprintf("uid-%07d", i), "resourceVersion": "1"},
				"data": map[string]any{"payload": payload}}})
		}
		if to < count {
			l.SetContinue(strconv.Itoa(to))
		}
		return l, nil
	}
}

// peakHeap samples the live heap until stop is called, and returns the highest.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

// A backup of 100,000 objects of 4 KiB (400 MB of bodies) takes memory for what it
// knows of each object, not for the bodies: they wait on disk until the tarball is
// written.
func TestBackupMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a 100,000-object backup")
	}
	const count, size = 100_000, 4096
	s, err := memcluster.StartServer(memcluster.Options{})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	dyn, err := dynamic.NewForConfig(s.Config())
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(s.Config())
	require.NoError(t, err)

	runtime.GC()
	stop := peakHeap()
	var out countingWriter
	res, err := Run(context.Background(), Source{Dynamic: listsConfigMaps{dyn, generated(count, size)}, Discovery: disc}, &out,
		Options{SpillDir: t.TempDir(), Filter: filter.Spec{IncludeResources: []string{"configmaps"}}})
	peak := stop()
	require.NoError(t, err)
	require.Empty(t, res.Incomplete)
	assert.Equal(t, count, res.Objects)
	t.Logf("%d objects, %d MB of bodies: peak heap %d MiB, tarball %d MB", count, count*size/1_000_000, peak>>20, out.n/1_000_000)
	// The manifest and the index of where each body waits are about 1 KB an object here;
	// the bodies alone would be 400 MB.
	assert.Less(t, peak, uint64(256<<20), "peak heap")
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }
