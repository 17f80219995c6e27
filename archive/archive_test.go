package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/restoregraph/restoregraph/manifest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func object(apiVersion, kind, ns, name, uid string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(types.UID(uid))
	return u
}

var deployments = schema.GroupResource{Group: "apps", Resource: "deployments"}

// writeSample writes a backup holding a namespace, a deployment at v1 (preferred) and
// v1beta2, and a configmap owned by the deployment.
func writeSample(t *testing.T, format string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, format)
	require.NoError(t, err)
	require.NoError(t, w.Add(object("v1", "Namespace", "", "shop", "ns-1"), "namespaces", true))
	dep := object("apps/v1", "Deployment", "shop", "web", "dep-1")
	dep.SetLabels(map[string]string{"app": "web"})
	require.NoError(t, w.Add(dep, "deployments", true))
	if format == Format11 {
		old := dep.DeepCopy()
		old.SetAPIVersion("apps/v1beta2")
		require.NoError(t, w.Add(old, "deployments", false))
	}
	cm := object("v1", "ConfigMap", "shop", "web-config", "cm-1")
	cm.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "dep-1"}})
	require.NoError(t, w.Add(cm, "configmaps", true))
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func TestReadFormat11(t *testing.T) {
	b, err := Read(context.Background(), bytes.NewReader(writeSample(t, Format11)), Options{})
	require.NoError(t, err)
	assert.Equal(t, Format11, b.Format())
	assert.Empty(t, b.Warnings())

	m := b.Manifest()
	require.Equal(t, 3, m.Len(), "each object once, whatever the number of versions")
	dep, ok := m.ByUID("dep-1")
	require.True(t, ok)
	assert.Equal(t, "v1", dep.Version, "the manifest records the preferred version")
	assert.Equal(t, "web", dep.Labels.Get("app"))
	cm, _ := m.ByUID("cm-1")
	assert.Equal(t, []types.UID{"dep-1"}, cm.OwnerUIDs)

	res, ok := b.Resource(deployments)
	require.True(t, ok)
	assert.Equal(t, []string{"v1", "v1beta2"}, res.Versions)
	assert.Equal(t, "v1", res.Preferred)
	assert.Equal(t, "v1-preferredversion", b.Dir(deployments, "v1"))
	assert.Equal(t, "v1beta2", b.Dir(deployments, "v1beta2"))

	for _, v := range []string{"v1", "v1beta2"} {
		obj, err := b.Object(dep, v)
		require.NoError(t, err)
		assert.Equal(t, "apps/"+v, obj.GetAPIVersion())
		assert.Equal(t, "web", obj.GetName())
	}
	_, err = b.Body(deployments, "v2", "shop", "web")
	assert.ErrorIs(t, err, ErrNotFound)

	var grs []string
	for _, r := range b.Resources() {
		grs = append(grs, r.GroupResource.String())
	}
	assert.Equal(t, []string{"configmaps", "namespaces", "deployments.apps"}, grs)
}

func TestReadFormat10(t *testing.T) {
	b, err := Read(context.Background(), bytes.NewReader(writeSample(t, Format10)), Options{})
	require.NoError(t, err)
	assert.Equal(t, Format10, b.Format())
	assert.Contains(t, b.Warnings(), "no metadata/version: read as format 1.0")
	assert.Equal(t, 3, b.Manifest().Len())
	res, _ := b.Resource(deployments)
	assert.Equal(t, []string{"v1"}, res.Versions)
	assert.Equal(t, "v1", res.Preferred)
	assert.Equal(t, "", b.Dir(deployments, "v1"))
	_, err = b.Body(deployments, "v1", "shop", "web")
	assert.NoError(t, err)
}

type entry struct {
	name     string
	body     string
	typeflag byte
	size     int64 // overrides len(body) in the header when set
}

func rawTar(t testing.TB, gz bool, entries ...entry) []byte {
	var buf bytes.Buffer
	var zw *gzip.Writer
	tw := tar.NewWriter(&buf)
	if gz {
		zw = gzip.NewWriter(&buf)
		tw = tar.NewWriter(zw)
	}
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: e.typeflag}
		if hdr.Typeflag == 0 {
			hdr.Typeflag = tar.TypeReg
		}
		if hdr.Typeflag != tar.TypeReg {
			hdr.Size = 0
			hdr.Linkname = "target"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	tw.Close()
	if zw != nil {
		zw.Close()
	}
	return buf.Bytes()
}

const podJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"n","uid":"pod-1"}}`

// TestReadsVeleroStyleTarball reads a tarball laid out by tar(1) from an extracted
// Velero backup: "./" prefixes, directory entries, and an uncompressed stream.
func TestReadsVeleroStyleTarball(t *testing.T) {
	data := rawTar(t, false,
		entry{name: "./", typeflag: tar.TypeDir},
		entry{name: "./metadata/", typeflag: tar.TypeDir},
		entry{name: "./metadata/version", body: "1.1.0"},
		entry{name: "./resources/pods/", typeflag: tar.TypeDir},
		entry{name: "./resources/pods/namespaces/n/p.json", body: podJSON},
		entry{name: "./resources/pods/v1-preferredversion/namespaces/n/p.json", body: podJSON},
		entry{name: "./velero-backup.json", body: "{}"},
	)
	b, err := Read(context.Background(), bytes.NewReader(data), Options{})
	require.NoError(t, err)
	assert.Equal(t, 1, b.Manifest().Len())
	assert.Equal(t, []string{"skipped velero-backup.json: not part of the backup layout"}, b.Warnings())
	res, _ := b.Resource(schema.GroupResource{Resource: "pods"})
	assert.Equal(t, "v1", res.Preferred)
}

// The items read of one resource at one version share one Type.
func TestItemsShareTheirType(t *testing.T) {
	var entries []entry
	for i := range 3 {
		for _, kind := range []string{"Pod", "ConfigMap"} {
			name := fmt.Sprintf("%s-%d", strings.ToLower(kind), i)
			entries = append(entries, entry{
				name: fmt.Sprintf("resources/%ss/namespaces/n/%s.json", strings.ToLower(kind), name),
				body: fmt.Sprintf(`{"apiVersion":"v1","kind":%q,"metadata":{"name":%q,"namespace":"n","uid":"u-%s"}}`, kind, name, name),
			})
		}
	}
	b, err := Read(context.Background(), bytes.NewReader(rawTar(t, true, entries...)), Options{})
	require.NoError(t, err)
	items := b.Manifest().Items()
	require.Len(t, items, 6)
	byKind := map[string]*manifest.Type{}
	for _, it := range items {
		if shared, ok := byKind[it.Kind]; ok {
			assert.Same(t, shared, it.Type, "%s", it)
		}
		byKind[it.Kind] = it.Type
	}
	assert.Equal(t, manifest.Type{Version: "v1", Kind: "Pod", Resource: "pods"}, *byKind["Pod"])
	assert.NotSame(t, byKind["Pod"], byKind["ConfigMap"])
}

func TestHostileInput(t *testing.T) {
	ok := entry{name: "resources/pods/namespaces/n/p.json", body: podJSON}
	tests := []struct {
		name    string
		entries []entry
		opts    Options
		path    string // the entry the error must name
		is      error
		limit   Limit
	}{
		{"absolute path", []entry{{name: "/etc/passwd", body: "x"}}, Options{}, "/etc/passwd", ErrUnsafeEntry, ""},
		{"parent directory", []entry{{name: "resources/../../evil.json", body: "x"}}, Options{}, "resources/../../evil.json", ErrUnsafeEntry, ""},
		{"unclean path", []entry{{name: "resources/pods//namespaces/n/p.json", body: podJSON}}, Options{}, "resources/pods//namespaces/n/p.json", ErrUnsafeEntry, ""},
		{"symlink", []entry{{name: "resources/pods/namespaces/n/p.json", typeflag: tar.TypeSymlink}}, Options{}, "resources/pods/namespaces/n/p.json", ErrUnsafeEntry, ""},
		{"hard link", []entry{{name: "resources/x", typeflag: tar.TypeLink}}, Options{}, "resources/x", ErrUnsafeEntry, ""},
		{"character device", []entry{{name: "dev", typeflag: tar.TypeChar}}, Options{}, "dev", ErrUnsafeEntry, ""},
		{"fifo", []entry{{name: "fifo", typeflag: tar.TypeFifo}}, Options{}, "fifo", ErrUnsafeEntry, ""},
		{"entry too large", []entry{ok}, Options{MaxEntryBytes: 10}, ok.name, ErrLimitExceeded, LimitEntrySize},
		{"manifest too large", []entry{{name: ManifestPath, body: strings.Repeat("x", 100)}}, Options{MaxManifestBytes: 50}, ManifestPath, ErrLimitExceeded, LimitManifestSize},
		{"total too large", []entry{ok, {name: "resources/pods/namespaces/n/q.json", body: podJSON}}, Options{MaxTotalBytes: int64(len(podJSON)) + 5}, "resources/pods/namespaces/n/q.json", ErrLimitExceeded, LimitTotalSize},
		{"too many entries", []entry{{name: "a/", typeflag: tar.TypeDir}, {name: "b/", typeflag: tar.TypeDir}, {name: "c/", typeflag: tar.TypeDir}}, Options{MaxEntries: 2}, "c/", ErrLimitExceeded, LimitEntries},
		{"malformed JSON", []entry{{name: ok.name, body: `{"apiVersion":`}}, Options{}, ok.name, nil, ""},
		{"name mismatch", []entry{{name: "resources/pods/namespaces/n/other.json", body: podJSON}}, Options{}, "resources/pods/namespaces/n/other.json", nil, ""},
		{"namespace mismatch", []entry{{name: "resources/pods/namespaces/m/p.json", body: podJSON}}, Options{}, "resources/pods/namespaces/m/p.json", nil, ""},
		{"version mismatch", []entry{{name: "resources/pods/v2/namespaces/n/p.json", body: podJSON}}, Options{}, "resources/pods/v2/namespaces/n/p.json", nil, ""},
		{"bad layout", []entry{{name: "resources/pods/n/p.json", body: podJSON}}, Options{}, "resources/pods/n/p.json", nil, ""},
		{"duplicate entry", []entry{ok, ok}, Options{}, ok.name, nil, ""},
		{"same uid twice", []entry{ok, {name: "resources/pods/namespaces/n/q.json", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q","namespace":"n","uid":"pod-1"}}`}}, Options{}, "", nil, ""},
		{"unknown format", []entry{{name: "metadata/version", body: "2.0.0"}, ok}, Options{}, "metadata/version", ErrUnsupportedFormat, ""},
		{"not a tarball", nil, Options{}, "(tar stream)", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := rawTar(t, true, tc.entries...)
			if tc.entries == nil {
				data = []byte("this is not a tarball at all, not even close, really not")
			}
			_, err := Read(context.Background(), bytes.NewReader(data), tc.opts)
			require.Error(t, err)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			var ee *EntryError
			var le *LimitError
			switch {
			case errors.As(err, &le):
				assert.Equal(t, tc.path, le.Path)
				assert.Equal(t, tc.limit, le.Limit)
			case errors.As(err, &ee):
				if tc.path != "" {
					assert.Equal(t, tc.path, ee.Path)
				}
			default:
				t.Fatalf("error %v is neither *EntryError nor *LimitError", err)
			}
		})
	}
}

func TestSpillFileKeepsBodiesInside(t *testing.T) {
	parent := t.TempDir()
	spill := filepath.Join(parent, "spill")
	require.NoError(t, os.Mkdir(spill, 0o755))
	// One byte of memory: every body after the first goes to the spill file.
	b, err := Read(context.Background(), bytes.NewReader(writeSample(t, Format11)), Options{SpillDir: spill, MemoryBytes: 1})
	require.NoError(t, err)
	assert.Zero(t, b.store.memLen, "once bodies spilled, the last ones follow them out of memory")
	assert.Empty(t, b.store.chunks)

	for _, it := range b.Manifest().Items() {
		obj, err := b.Object(it, it.Version)
		require.NoError(t, err, "%s", it)
		assert.Equal(t, it.UID, obj.GetUID())
	}
	dep, _ := b.Manifest().ByUID("dep-1")
	obj, err := b.Object(dep, "v1beta2")
	require.NoError(t, err)
	assert.Equal(t, "apps/v1beta2", obj.GetAPIVersion())

	files := func(dir string) (out []string) {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	require.Len(t, files(parent), 1, "one spill file, and nothing outside the spill directory")
	assert.Equal(t, spill, filepath.Dir(files(parent)[0]))
	require.NoError(t, b.Close())
	assert.Empty(t, files(parent), "Close removes the spill file")

	_, err = Read(context.Background(), bytes.NewReader(writeSample(t, Format11)), Options{SpillDir: filepath.Join(parent, "missing")})
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

// withManifest writes the sample again with its manifest first, as backup does, and
// extra entries after the objects.
func withManifest(t *testing.T, extra ...entry) string {
	t.Helper()
	b, err := Read(context.Background(), bytes.NewReader(writeSample(t, Format11)), Options{})
	require.NoError(t, err)
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Format11)
	require.NoError(t, err)
	require.NoError(t, w.AddManifest(b.Manifest()))
	for _, it := range b.Manifest().Items() {
		for _, v := range []string{"v1", "v1beta2"} {
			obj, err := b.Object(it, v)
			if err != nil {
				continue
			}
			require.NoError(t, w.Add(obj, it.Resource, v == it.Version))
		}
	}
	for _, e := range extra {
		require.NoError(t, w.file(e.name, []byte(e.body)))
	}
	require.NoError(t, w.Close())
	path := filepath.Join(t.TempDir(), "b.tar.gz")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	return path
}

// A carried manifest grows with the objects, past what one object may be (a million
// objects' is about 35 MB, gzip'd): its entry is held to a limit of its own.
func TestCarriedManifestHasItsOwnLimit(t *testing.T) {
	path := withManifest(t)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	e, err := newEntries(f, Options{}.withDefaults())
	require.NoError(t, err)
	defer e.close()
	var size int64
	for {
		name, _, data, err := e.next()
		require.NoError(t, err)
		if name == ManifestPath {
			size = int64(len(data))
			break
		}
	}
	// Each object's body is smaller than the manifest, which names them all.
	b, err := ReadFile(context.Background(), path, Options{MaxEntryBytes: size - 1})
	require.NoError(t, err)
	assert.Positive(t, b.Manifest().Len())
	b.Close()

	_, err = ReadFile(context.Background(), path, Options{MaxEntryBytes: size - 1, MaxManifestBytes: size - 1})
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, LimitError{Path: ManifestPath, Limit: LimitManifestSize, Max: size - 1}, *le)
}

// A backup that carries its manifest is planned from it: ReadFile returns before the
// bodies, and reads them as they are asked for.
func TestCarriedManifestDefersBodies(t *testing.T) {
	path := withManifest(t)
	b, err := ReadFile(context.Background(), path, Options{})
	require.NoError(t, err)
	defer b.Close()
	assert.NotNil(t, b.rest, "no body read yet")
	assert.Zero(t, b.bodies.Len())
	b.mu.Lock()
	require.NoError(t, b.readRest(&bodyKey{gr: schema.GroupResource{Resource: "namespaces"}, version: "v1", name: "shop"}))
	assert.NotNil(t, b.rest, "reading stops at the body asked for")
	b.mu.Unlock()
	assert.Equal(t, 3, b.Manifest().Len())

	// Workers of a restore ask at once.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, it := range b.Manifest().Items() {
				_, err := b.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	cm, ok := b.Manifest().ByUID("cm-1")
	require.True(t, ok)
	obj, err := b.Object(cm, cm.Version)
	require.NoError(t, err)
	assert.Equal(t, "web-config", obj.GetName())
	dep, _ := b.Manifest().ByUID("dep-1")
	obj, err = b.Object(dep, "v1beta2")
	require.NoError(t, err, "another version, read on the way")
	assert.Equal(t, "apps/v1beta2", obj.GetAPIVersion())
	_, err = b.Body(deployments, "v2", "shop", "web")
	assert.ErrorIs(t, err, ErrNotFound, "a body the backup does not hold, after reading it all")
	assert.Nil(t, b.rest)
	assert.Empty(t, b.Warnings())

	// Read gives the same, reading everything at once.
	all, err := Read(context.Background(), bytes.NewReader(must(os.ReadFile(path))), Options{})
	require.NoError(t, err)
	assert.Nil(t, all.rest)
	for _, it := range all.Manifest().Items() {
		want, err := all.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
		require.NoError(t, err)
		got, err := b.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}

// A copy that is not kept is never mistaken for the body last stored.
func TestCopyNotKeptIsNotShared(t *testing.T) {
	v1 := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api","namespace":"shop","uid":"dep-2"}}`
	v2 := `{"apiVersion":"apps/v2","kind":"Deployment","metadata":{"name":"api","namespace":"shop","uid":"dep-2"}}`
	path := withManifest(t,
		entry{name: "resources/deployments.apps/v1/namespaces/shop/api.json", body: v1},
		entry{name: "resources/deployments.apps/namespaces/shop/api.json", body: v2}, // v1 is held: not kept
		entry{name: "resources/deployments.apps/v2/namespaces/shop/api.json", body: v2})
	b, err := ReadFile(context.Background(), path, Options{})
	require.NoError(t, err)
	defer b.Close()
	got, err := b.Body(deployments, "v2", "shop", "api")
	require.NoError(t, err)
	assert.JSONEq(t, v2, string(got))
	got, err = b.Body(deployments, "v1", "shop", "api")
	require.NoError(t, err)
	assert.JSONEq(t, v1, string(got))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// What is wrong after the manifest is found when the bodies are read: the body asked
// for fails, naming why, and every later one too.
func TestCarriedManifestBadEntryLater(t *testing.T) {
	path := withManifest(t, entry{name: "resources/pods/v1/namespaces/shop/../../../../../escape.json", body: podJSON},
		entry{name: "resources/pods/v1/namespaces/shop/after.json", body: podJSON})
	b, err := ReadFile(context.Background(), path, Options{})
	require.NoError(t, err)
	defer b.Close()
	_, err = b.Body(schema.GroupResource{Resource: "pods"}, "v1", "shop", "after")
	var ee *EntryError
	require.ErrorAs(t, err, &ee, "the bad entry is met on the way")
	assert.ErrorIs(t, err, ErrUnsafeEntry)
	assert.Contains(t, ee.Path, "escape.json")
	assert.ErrorIs(t, b.ReadRest(), ErrUnsafeEntry, "and it stays the answer")

	path = withManifest(t, entry{name: "resources/pods/namespaces/shop/extra.json", body: podJSON})
	b, err = ReadFile(context.Background(), path, Options{})
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, b.ReadRest())
	assert.Equal(t, []string{"1 body(ies) in the backup belong to no object of its manifest"}, b.Warnings())
}

func TestWriterRefuses(t *testing.T) {
	_, err := NewWriter(&bytes.Buffer{}, "3.0")
	assert.ErrorIs(t, err, ErrUnsupportedFormat)

	w, err := NewWriter(&bytes.Buffer{}, Format10)
	require.NoError(t, err)
	assert.Error(t, w.Add(object("v1", "Pod", "n", "p", "u"), "pods", false), "format 1.0 holds one version")

	w, _ = NewWriter(&bytes.Buffer{}, Format11)
	require.NoError(t, w.Add(object("v1", "Pod", "n", "p", "u"), "pods", true))
	assert.Error(t, w.Add(object("v1", "Pod", "n", "p", "u"), "pods", true), "the same object twice")
	assert.Error(t, w.Add(object("", "Pod", "n", "q", "u"), "pods", true), "no apiVersion")
}

func TestWriterIsDeterministic(t *testing.T) {
	assert.Equal(t, writeSample(t, Format11), writeSample(t, Format11))
}

func FuzzRead(f *testing.F) {
	f.Add(rawTar(f, true, entry{name: "metadata/version", body: "1.1.0"}, entry{name: "resources/pods/v1-preferredversion/namespaces/n/p.json", body: podJSON}))
	f.Add(rawTar(f, false, entry{name: "resources/pods/cluster/p.json", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`}))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Read(context.Background(), bytes.NewReader(data), Options{MaxTotalBytes: 1 << 20})
		if err != nil {
			var ee *EntryError
			var le *LimitError
			if !errors.As(err, &ee) && !errors.As(err, &le) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		for _, it := range b.Manifest().Items() {
			if _, err := b.Object(it, it.Version); err != nil {
				t.Fatalf("an item in the manifest has no body at its own version: %v", err)
			}
		}
	})
}

// TestRealBackupFoldsEvents reads a backup a real API server wrote: every Event is
// listed under two groups with one UID, and is one object.
func TestRealBackupFoldsEvents(t *testing.T) {
	b, err := ReadFile(context.Background(), "../testdata/backups/shop-k8s-1.37.tar.gz", Options{})
	require.NoError(t, err)
	m := b.Manifest()
	events := 0
	for it, copies := range m.Folded() {
		events++
		assert.Equal(t, "events.k8s.io", it.Group)
		require.Len(t, copies, 1)
		assert.Equal(t, schema.GroupResource{Resource: "events"}, copies[0].GroupResource())
	}
	assert.Positive(t, events)
	res, ok := b.Resource(schema.GroupResource{Resource: "events"})
	assert.True(t, ok, "the folded group-resource is still one the backup holds")
	assert.Equal(t, "v1", res.Preferred)
}

// A read stops when its context is done.
func TestReadStopsWithItsContext(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Read(done, bytes.NewReader(writeSample(t, Format11)), Options{})
	require.ErrorIs(t, err, context.Canceled)
	_, err = ReadFile(done, withManifest(t), Options{})
	require.ErrorIs(t, err, context.Canceled)
}

// Bodies are decoded beside the walk, batches at a time; what is wrong is still met in
// the tarball's order: the first bad entry is the one named, not a later bad one, nor
// the broken end of the stream after it.
func TestReadNamesTheFirstBadEntry(t *testing.T) {
	var es []entry
	for i := range 2000 {
		name := fmt.Sprintf("p-%d", i)
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"n","uid":"u-%d"}}`, name, i)
		switch i {
		case 1500:
			body = strings.Replace(body, name, "other", 1)
		case 1650: // wrong too, and later, in a batch decoded meanwhile
			body = strings.Replace(body, `"namespace":"n"`, `"namespace":"m"`, 1)
		}
		es = append(es,
			entry{name: "resources/pods/v1-preferredversion/namespaces/n/" + name + ".json", body: body},
			entry{name: "resources/pods/namespaces/n/" + name + ".json", body: body})
	}
	data := rawTar(t, true, es...)
	_, err := Read(context.Background(), bytes.NewReader(data), Options{})
	var ee *EntryError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "resources/pods/v1-preferredversion/namespaces/n/p-1500.json", ee.Path)
	assert.Contains(t, err.Error(), `metadata.name "other" does not match the file name`)

	plain := rawTar(t, false, es...)
	_, err = Read(context.Background(), bytes.NewReader(plain[:len(plain)*9/10]), Options{})
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "resources/pods/v1-preferredversion/namespaces/n/p-1500.json", ee.Path, "before the stream's end")

	// A third copy with the bytes of the second, which the first outranks, is judged
	// against the first.
	dep := func(label string) string {
		return `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api","namespace":"shop","uid":"d","labels":{"l":"` + label + `"}}}`
	}
	_, err = Read(context.Background(), bytes.NewReader(rawTar(t, false,
		entry{name: "resources/deployments.apps/v1-preferredversion/namespaces/shop/api.json", body: dep("a")},
		entry{name: "resources/deployments.apps/namespaces/shop/api.json", body: dep("b")}, // v1 is held: not kept
		entry{name: "resources/deployments.apps/v1/namespaces/shop/api.json", body: dep("b")},
	)), Options{})
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "resources/deployments.apps/v1/namespaces/shop/api.json", ee.Path)
	assert.ErrorIs(t, err, errDuplicate)
}

// The walk's names live in its batches, which later entries reuse: nothing the read
// keeps (the manifest, the body index) may be one of them. Thousands of objects, many
// batches: every object's body is found under its own name, and is its own.
func TestReadKeepsNoNameOfTheWalk(t *testing.T) {
	var es []entry
	for i := range 3000 {
		name, ns := fmt.Sprintf("cm-%04d", i), fmt.Sprintf("ns-%d", i%7)
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q,"uid":"u-%d"}}`, name, ns, i)
		es = append(es,
			entry{name: "resources/configmaps/v1-preferredversion/namespaces/" + ns + "/" + name + ".json", body: body},
			entry{name: "resources/configmaps/namespaces/" + ns + "/" + name + ".json", body: body})
	}
	b, err := Read(context.Background(), bytes.NewReader(rawTar(t, true, es...)), Options{})
	require.NoError(t, err)
	defer b.Close()
	require.Equal(t, 3000, b.Manifest().Len())
	for _, it := range b.Manifest().Items() {
		obj, err := b.Object(it, it.Version)
		require.NoError(t, err, "%s", it)
		require.Equal(t, it.Name, obj.GetName())
		require.Equal(t, it.Namespace, obj.GetNamespace())
	}
}

// An object Velero writes twice, at its version and as the preferred version, one
// after the other, is kept once: also where the two copies fall into two of the
// walk's batches (one object written once first puts every pair across a batch's
// end once).
func TestCopiesOfAnObjectAreKeptOnce(t *testing.T) {
	pod := func(i int) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-%d","namespace":"n","uid":"u-%d"}}`, i, i)
	}
	entries := []entry{{name: "resources/pods/namespaces/n/p-0.json", body: pod(0)}}
	total := len(pod(0))
	for i := 1; i <= 3*batchEntries; i++ {
		entries = append(entries,
			entry{name: fmt.Sprintf("resources/pods/namespaces/n/p-%d.json", i), body: pod(i)},
			entry{name: fmt.Sprintf("resources/pods/v1-preferredversion/namespaces/n/p-%d.json", i), body: pod(i)})
		total += len(pod(i))
	}
	b, err := Read(context.Background(), bytes.NewReader(rawTar(t, true, entries...)), Options{})
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, 3*batchEntries+1, b.Manifest().Len())
	assert.Equal(t, total, b.store.memLen, "each object's bytes kept once")
	for _, i := range []int{0, batchEntries / 2, 3 * batchEntries} {
		body, err := b.Body(schema.GroupResource{Resource: "pods"}, "v1", "n", fmt.Sprintf("p-%d", i))
		require.NoError(t, err)
		assert.JSONEq(t, pod(i), string(body))
	}
}

// Two objects that claim one UID are refused, the second named by its path, in a
// backup large enough that the copies describing its objects fill more than one chunk.
func TestReadRefusesTwoObjectsWithOneUID(t *testing.T) {
	var es []entry
	for i := range 3 * describedChunk / 2 {
		name := fmt.Sprintf("p-%d", i)
		uid := fmt.Sprintf("u-%d", i)
		if i == describedChunk+10 {
			uid = "u-10"
		}
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"n","uid":%q}}`, name, uid)
		es = append(es,
			entry{name: "resources/pods/namespaces/n/" + name + ".json", body: body},
			entry{name: "resources/pods/v1-preferredversion/namespaces/n/" + name + ".json", body: body})
	}
	_, err := Read(context.Background(), bytes.NewReader(rawTar(t, true, es...)), Options{})
	var ee *EntryError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, fmt.Sprintf("resources/pods/v1-preferredversion/namespaces/n/p-%d.json", describedChunk+10), ee.Path)
	assert.ErrorIs(t, err, manifest.ErrItemAlreadyExists)
	assert.Contains(t, err.Error(), "u-10")
}

// Each group-resource's versions are gathered from its entries one after another: a
// version after another of one group-resource, and a group-resource after another at
// one version.
func TestVersionsGatheredEntryAfterEntry(t *testing.T) {
	obj := func(kind, version, name string) string {
		return `{"apiVersion":"apps/` + version + `","kind":"` + kind + `","metadata":{"name":"` + name + `","namespace":"shop","uid":"` + name + `"}}`
	}
	b, err := Read(context.Background(), bytes.NewReader(rawTar(t, true,
		entry{name: "metadata/version", body: "1.1.0"},
		entry{name: "resources/deployments.apps/v1-preferredversion/namespaces/shop/d.json", body: obj("Deployment", "v1", "d")},
		entry{name: "resources/deployments.apps/v1beta2/namespaces/shop/d.json", body: obj("Deployment", "v1beta2", "d")},
		entry{name: "resources/statefulsets.apps/v1beta2/namespaces/shop/s.json", body: obj("StatefulSet", "v1beta2", "s")},
		entry{name: "resources/statefulsets.apps/v1-preferredversion/namespaces/shop/s.json", body: obj("StatefulSet", "v1", "s")},
	)), Options{})
	require.NoError(t, err)
	for _, gr := range []schema.GroupResource{deployments, {Group: "apps", Resource: "statefulsets"}} {
		res, ok := b.Resource(gr)
		require.True(t, ok, gr)
		assert.Equal(t, []string{"v1", "v1beta2"}, res.Versions, gr)
		assert.Equal(t, "v1", res.Preferred, gr)
	}
	assert.Equal(t, 2, b.Manifest().Len())
}
