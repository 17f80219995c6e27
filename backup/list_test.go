package backup

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/memcluster"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// listsConfigMaps is a dynamic client whose ConfigMap lists are list's; everything
// else goes to the client it wraps.
type listsConfigMaps struct {
	dynamic.Interface
	list listFunc
}

type listFunc func(ctx context.Context, ns string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)

func (c listsConfigMaps) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	r := c.Interface.Resource(gvr)
	if gvr != configMaps {
		return r
	}
	return configMapResource{r, c.list}
}

type configMapResource struct {
	dynamic.NamespaceableResourceInterface
	list listFunc
}

func (r configMapResource) Namespace(ns string) dynamic.ResourceInterface {
	return configMapsIn{r.NamespaceableResourceInterface.Namespace(ns), ns, r.list}
}

type configMapsIn struct {
	dynamic.ResourceInterface
	ns   string
	list listFunc
}

func (r configMapsIn) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return r.list(ctx, r.ns, opts)
}

// A continue token that expires between pages (the server compacted meanwhile) does not
// make the backup incomplete: the rest is read in one full list, and every object is in
// the tarball once.
func TestExpiredContinueToken(t *testing.T) {
	ctx := context.Background()
	// A short history: a few writes after the first page expire its continue token, as
	// compaction does on a real server during a long backup.
	s, err := memcluster.StartServer(memcluster.Options{History: 5})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	dyn, err := dynamic.NewForConfig(s.Config())
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(s.Config())
	require.NoError(t, err)
	for _, ns := range []string{"kept", "busy"} {
		_, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx,
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	cm := func(ns, name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"k": name}}}
	}
	const n = 30
	for i := range n {
		_, err := dyn.Resource(configMaps).Namespace("kept").Create(ctx, cm("kept", fmt.Sprintf("cm-%02d", i)), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// Writes elsewhere once the first page is handed out (the pager lists one page at a
	// time, from one goroutine).
	pages := 0
	hooked := listsConfigMaps{dyn, func(ctx context.Context, ns string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
		l, err := dyn.Resource(configMaps).Namespace(ns).List(ctx, opts)
		if pages++; err == nil && pages == 1 {
			for i := range 10 {
				_, err := dyn.Resource(configMaps).Namespace("busy").Create(ctx, cm("busy", fmt.Sprintf("w-%02d", i)), metav1.CreateOptions{})
				assert.NoError(t, err)
			}
		}
		return l, err
	}}

	var buf bytes.Buffer
	res, err := Run(ctx, Source{Dynamic: hooked, Discovery: disc}, &buf, Options{PageSize: 4, SpillDir: t.TempDir(),
		Filter: filter.Spec{IncludeNamespaces: []string{"kept"}, IncludeResources: []string{"configmaps"}}})
	require.NoError(t, err)
	assert.Empty(t, res.Incomplete, "the expired token made the backup incomplete")
	assert.Equal(t, 1, res.Expired, "the token expired, and the rest was read in a full list")
	assert.Equal(t, n+1, res.Objects, "the ConfigMaps and their namespace")

	b, err := archive.Read(context.Background(), bytes.NewReader(buf.Bytes()), archive.Options{})
	require.NoError(t, err)
	seen := map[string]int{}
	for it := range b.Manifest().All() {
		if it.Resource == "configmaps" {
			seen[it.Name]++
		}
	}
	assert.Len(t, seen, n)
	for name, times := range seen {
		assert.Equal(t, 1, times, "%s once", name)
	}
}

// Discovery takes the backup's context: a server that does not answer does not hold
// the backup past its deadline.
func TestDiscoveryTakesTheContext(t *testing.T) {
	hung := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hung:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hung); srv.Close() })
	cfg := &rest.Config{Host: srv.URL}
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Source{Dynamic: dyn, Discovery: disc}, io.Discard, Options{SpillDir: t.TempDir()})
		done <- err
	}()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(10 * time.Second):
		t.Fatal("discovery went on past the backup's deadline")
	}
}
