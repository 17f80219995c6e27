package memcluster

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/memcluster/contract"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

func TestContract(t *testing.T) {
	// A short history, as a real server compacts: old continue tokens and watch versions expire.
	opts := Options{EstablishDelay: 50 * time.Millisecond, GC: true, GCDelay: 50 * time.Millisecond, History: 300, BindVolumes: true}
	t.Run("loopback", func(t *testing.T) {
		s, err := StartServer(opts)
		require.NoError(t, err)
		defer s.Close()
		contract.Run(t, s.Config(), "mem", contract.Options{GC: true, VolumeBinder: true, Timeout: 10 * time.Second})
	})
	t.Run("in-process", func(t *testing.T) {
		s, err := StartServer(opts)
		require.NoError(t, err)
		defer s.Close()
		contract.Run(t, s.InProcessConfig(), "mem", contract.Options{GC: true, VolumeBinder: true, Timeout: 10 * time.Second})
	})
	t.Run("data file", func(t *testing.T) {
		opts := opts
		opts.DataDir, opts.dataFlush = t.TempDir(), 1 // each object written at once: read from the file
		s, err := StartServer(opts)
		require.NoError(t, err)
		defer s.Close()
		contract.Run(t, s.InProcessConfig(), "mem", contract.Options{GC: true, VolumeBinder: true, Timeout: 10 * time.Second})
		require.NoError(t, s.DataFileError())
		assert.Positive(t, s.file.size(), "the objects' JSON went to the file")
		left, err := os.ReadDir(opts.DataDir)
		require.NoError(t, err)
		assert.Empty(t, left, "the file is not in its directory")
	})
}

func u(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		o.Object[k] = v
	}
	o.SetNamespace(ns)
	o.SetName(name)
	return o
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	t.Run("loopback", func(t *testing.T) { closeLeavesNoGoroutine(t, (*Server).Config) })
	t.Run("in-process", func(t *testing.T) { closeLeavesNoGoroutine(t, (*Server).InProcessConfig) })
}

func closeLeavesNoGoroutine(t *testing.T, config func(*Server) *rest.Config) {
	before := runtime.NumGoroutine()
	s, err := StartServer(Options{GC: true, EstablishDelay: time.Hour})
	require.NoError(t, err)
	stop := s.Close
	client, err := dynamic.NewForConfig(config(s))
	require.NoError(t, err)
	ctx := context.Background()
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	_, err = client.Resource(nsGVR).Create(ctx, u("v1", "Namespace", "", "a", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	w, err := client.Resource(nsGVR).Watch(ctx, metav1.ListOptions{}) // left open
	require.NoError(t, err)
	crd := u("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.x.io", map[string]any{"spec": map[string]any{
		"group": "x.io", "scope": "Namespaced", "names": map[string]any{"plural": "widgets", "kind": "Widget"},
		"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true}},
	}})
	_, err = client.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).Create(ctx, crd, metav1.CreateOptions{})
	require.NoError(t, err) // its establishment is still pending when the server stops
	require.NoError(t, client.Resource(nsGVR).Delete(ctx, "a", metav1.DeleteOptions{}))

	stop()
	stop() // idempotent
	w.Stop()
	for deadline := time.Now().Add(3 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines before, %d after Close:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
