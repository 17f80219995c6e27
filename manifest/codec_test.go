package manifest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// sample returns a deterministic manifest of n items spread over groups, versions,
// namespaces and owner chains, with labels and annotations as real objects carry them.
func sample(n int) *Manifest {
	kinds := []struct{ group, version, kind, resource string }{
		{"", "v1", "ConfigMap", "configmaps"},
		{"", "v1", "Secret", "secrets"},
		{"apps", "v1", "Deployment", "deployments"},
		{"cluster.x-k8s.io", "v1beta1", "Machine", "machines"},
	}
	m := New(n)
	for i := range n {
		k := kinds[i%len(kinds)]
		it := &Item{
			Type:      &Type{Group: k.group, Version: k.version, Kind: k.kind, Resource: k.resource},
			Namespace: fmt.Sprintf("ns-%03d", i%97),
			Name:      fmt.Sprintf("%s-%08d", strings.ToLower(k.kind), i),
			UID:       uid(i),
			Labels: PairsFromMap(map[string]string{
				"app.kubernetes.io/name":        fmt.Sprintf("app-%d", i%50),
				"cluster.x-k8s.io/cluster-name": fmt.Sprintf("c-%d", i%20),
			}),
			Annotations: PairsFromMap(map[string]string{"restoregraph.dev/index": fmt.Sprint(i)})}
		if i > 0 && i%3 != 0 {
			it.OwnerUIDs = []types.UID{uid(i - 1)}
		}
		if _, err := m.Add(it); err != nil {
			panic(err)
		}
	}
	return m
}

// uid returns a random-looking but reproducible UUID for i, so that compressed sizes
// are those of real UIDs rather than of a counter.
func uid(i int) types.UID {
	h := fnv.New128a()
	fmt.Fprint(h, i)
	b := h.Sum(nil)
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]))
}

func TestCodecRoundTrip(t *testing.T) {
	m := sample(500)
	mustAdd(t, m, &Item{Type: &Type{Version: "v1", Kind: "Namespace", Resource: "namespaces"}, Name: `odd "name" <&>`, UID: "ns"})
	for _, tc := range []struct {
		name   string
		encode func(*bytes.Buffer, *Manifest) error
	}{
		{"plain", func(b *bytes.Buffer, m *Manifest) error { return Encode(b, m) }},
		{"gzip", func(b *bytes.Buffer, m *Manifest) error { return EncodeGzip(b, m) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, tc.encode(&buf, m))
			got, err := Decode(&buf)
			require.NoError(t, err)
			assert.Equal(t, m.Items(), got.Items())
			// Items of one kind at one version share their Type: one pointer each.
			types := map[Type]*Type{}
			for _, it := range got.Items() {
				if shared, ok := types[*it.Type]; ok {
					require.Same(t, shared, it.Type, "%s", it)
				}
				types[*it.Type] = it.Type
			}
			assert.Less(t, len(types), 20)
		})
	}
	t.Run("empty", func(t *testing.T) {
		var buf bytes.Buffer
		require.NoError(t, Encode(&buf, New(0)))
		got, err := Decode(&buf)
		require.NoError(t, err)
		assert.Zero(t, got.Len())
	})
	t.Run("encoding is deterministic", func(t *testing.T) {
		var a, b bytes.Buffer
		require.NoError(t, Encode(&a, sample(50)))
		require.NoError(t, Encode(&b, sample(50)))
		assert.Equal(t, a.String(), b.String())
	})
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	m := sample(40)
	for _, name := range []string{"manifest.json", "manifest.json.gz"} {
		path := filepath.Join(dir, name)
		require.NoError(t, WriteFile(path, m))
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		gz := raw[0] == 0x1f && raw[1] == 0x8b
		assert.Equal(t, strings.HasSuffix(name, ".gz"), gz, name)
		got, err := ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, m.Items(), got.Items())
	}
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 2, "no temporary files are left behind")

	_, err := ReadFile(filepath.Join(dir, "missing.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestDecodeKeyOrderAndUnknownFields(t *testing.T) {
	// Keys sorted alphabetically put namespaces before version, and future fields appear,
	// one whose values and nested objects repeat names without repeating one in an object.
	doc := `{"groupVersions":[{"group":"apps","namespaces":[{"items":[{"kind":"Deployment","name":"web","resource":"deployments","uid":"u1","future":[1,2]}],"namespace":"shop"}],"version":"v1"}],"formatVersion":"1","extra":{"a":"a","b":["a","a"],"c":{"a":{"a":"a"}},"d":[{"a":1},{"a":2}]}}`
	m, err := Decode(strings.NewReader(doc))
	require.NoError(t, err)
	it, ok := m.ByUID("u1")
	require.True(t, ok)
	assert.Equal(t, &Item{Type: &Type{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments"}, Namespace: "shop", Name: "web", UID: "u1"}, it)
}

func TestDecodeErrorsSayWhere(t *testing.T) {
	good := `{"kind":"ConfigMap","resource":"configmaps","name":"a","uid":"u1"}`
	wrap := func(items string) string {
		return `{"formatVersion":"1","groupVersions":[{"group":"","version":"v1","namespaces":[{"namespace":"n","items":[` + items + `]}]}]}`
	}
	tests := []struct {
		name, doc, path, msg string
		is                   error
	}{
		{"not json", `hello`, "", "invalid character", nil},
		{"wrong format", `{"formatVersion":"9","groupVersions":[]}`, "/formatVersion", "", ErrUnsupportedFormat},
		{"no format", `{"groupVersions":[]}`, "/formatVersion", "missing", nil},
		{"bad field type", wrap(good + `,{"kind":"ConfigMap","resource":"configmaps","name":7,"uid":"u2"}`), "/groupVersions/0/namespaces/0/items/1/name", "expected a string", nil},
		{"duplicate uid", wrap(good + `,{"kind":"ConfigMap","resource":"configmaps","name":"b","uid":"u1"}`), "/groupVersions/0/namespaces/0/items/1", "", ErrItemAlreadyExists},
		{"missing uid", wrap(`{"kind":"ConfigMap","resource":"configmaps","name":"b"}`), "/groupVersions/0/namespaces/0/items/0", "uid", nil},
		{"duplicate identity in a later namespace and group-version", `{"formatVersion":"1","groupVersions":[` +
			`{"group":"","version":"v1","namespaces":[{"namespace":"n","items":[` + good + `]}]},` +
			`{"group":"apps","version":"v1","namespaces":[{"namespace":"n","items":[{"kind":"Deployment","resource":"deployments","name":"a","uid":"u2"}]},` +
			`{"namespace":"m","items":[{"kind":"Deployment","resource":"deployments","name":"a","uid":"u3"},{"kind":"Deployment","resource":"deployments","name":"b","uid":"u1"}]}]}]}`,
			"/groupVersions/1/namespaces/1/items/1", "uid u1", ErrItemAlreadyExists},
		{"truncated in an item", wrap(good)[:120], "/groupVersions/0/namespaces/0/items/0/kind", "unexpected EOF", nil},
		{"truncated between items", wrap(good + ",")[:171], "/groupVersions/0/namespaces/0/items", "unexpected EOF", nil},
		{"label value not a string", wrap(`{"kind":"ConfigMap","resource":"configmaps","name":"b","uid":"u","labels":{"a":1}}`), "/groupVersions/0/namespaces/0/items/0/labels/a", "expected a string", nil},
		{"duplicate label key", wrap(`{"kind":"ConfigMap","resource":"configmaps","name":"b","uid":"u","labels":{"a":"1","a":"2"}}`), "/groupVersions/0/namespaces/0/items/0/labels", "duplicate", nil},
		{"duplicate annotation key", wrap(`{"kind":"ConfigMap","resource":"configmaps","name":"b","uid":"u","annotations":{"b":"1","a":"2","b":"3"}}`), "/groupVersions/0/namespaces/0/items/0/annotations", `duplicate key "b"`, nil},
		{"duplicate member of an item", wrap(`{"kind":"ConfigMap","resource":"configmaps","name":"b","uid":"u","uid":"v"}`), "/groupVersions/0/namespaces/0/items/0", `duplicate member "uid"`, nil},
		{"duplicate member past the sixteenth", wrap(`{"kind":"ConfigMap","resource":"configmaps","name":"b","uid":"u"` + manyMembers(14) + `,"f3":0}`), "/groupVersions/0/namespaces/0/items/0", `duplicate member "f3"`, nil},
		{"duplicate member twice past the sixteenth", wrap(`{"kind":"ConfigMap","resource":"configmaps","name":"b","uid":"u"` + manyMembers(20) + `,"f18":0}`), "/groupVersions/0/namespaces/0/items/0", `duplicate member "f18"`, nil},
		{"duplicate member in an unknown member's value", wrap(`{"kind":"ConfigMap","resource":"configmaps","name":"b","uid":"u","future":[{"a":1,"a":2}]}`), "/groupVersions/0/namespaces/0/items/0/future", "duplicate", nil},
		{"duplicate member of the document", `{"formatVersion":"1","groupVersions":[],"formatVersion":"1"}`, "", `duplicate member "formatVersion"`, nil},
		{"key with a slash", wrap(`{"kind":"ConfigMap","resource":"configmaps","name":"b","uid":"u","labels":{"a/b":{}}}`), "/groupVersions/0/namespaces/0/items/0/labels/a~1b", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.doc))
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, tc.path, de.Path)
			assert.Contains(t, err.Error(), tc.msg)
			if tc.is != nil {
				assert.True(t, errors.Is(err, tc.is), err)
			}
		})
	}
	t.Run("corrupt gzip", func(t *testing.T) {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(wrap(good)))
		zw.Close()
		raw := buf.Bytes()
		raw = raw[:len(raw)/2]
		_, err := Decode(bytes.NewReader(raw))
		var de *DecodeError
		require.ErrorAs(t, err, &de)
	})
}

// TestDecodeReservesNothingForTheItemCount: itemCount is a writer's word, not a size to
// reserve memory for; a document that claims millions of items and holds none
// allocates next to nothing.
func TestDecodeReservesNothingForTheItemCount(t *testing.T) {
	for _, n := range []string{"1000000", "16777216", "999999999999"} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, err := Decode(strings.NewReader(`{"formatVersion":"1","itemCount":` + n + `,"groupVersions":[]}`))
		runtime.ReadMemStats(&after)
		require.NoError(t, err)
		assert.Zero(t, m.Len())
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "bytes allocated for itemCount %s", n)
	}
}

// manyMembers returns n members ,"f0":0 to ,"f<n-1>":0 for an object.
func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `,"f%d":0`, i)
	}
	return b.String()
}

func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	_ = Encode(&buf, sample(5))
	f.Add(buf.Bytes())
	f.Add([]byte(`{"formatVersion":"1","groupVersions":[{"namespaces":[{"items":[{}]}]}]}`))
	f.Add([]byte(`{"formatVersion":"1"}`))
	// One byte from a member named twice, and a label key named twice.
	f.Add([]byte(`{"formatVersion":"1","groupVersions":[{"version":"v1","namespaces":[{"items":[{"kind":"K","resource":"r","name":"a","uid":"u","uie":"v","labels":{"a":"1","b":"2"}}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(bytes.NewReader(data))
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error is not a *DecodeError: %v", err)
			}
			return
		}
		// Whatever decodes is JSON whose objects name each member once: the decoder
		// checks names itself, not through jsontext, whose default refuses repeats.
		if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
			if _, err := jsontext.NewDecoder(bytes.NewReader(data)).ReadValue(); err != nil {
				t.Fatalf("decoded what jsontext refuses: %v", err)
			}
		}
		// Whatever decodes must survive a round trip unchanged.
		var out bytes.Buffer
		if err := Encode(&out, m); err != nil {
			t.Fatal(err)
		}
		again, err := Decode(&out)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if again.Len() != m.Len() {
			t.Fatalf("round trip changed the item count: %d != %d", again.Len(), m.Len())
		}
	})
}

func TestResourcesRoundTrip(t *testing.T) {
	m := New(0)
	deployments := schema.GroupResource{Group: "apps", Resource: "deployments"}
	_, err := m.Add(&Item{Type: &Type{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments"}, Namespace: "shop", Name: "web", UID: "u1"})
	require.NoError(t, err)
	_, err = m.Add(&Item{Type: &Type{Version: "v1", Kind: "ConfigMap", Resource: "configmaps"}, Namespace: "shop", Name: "c", UID: "u2"})
	require.NoError(t, err)
	m.SetVersions(deployments, []string{"v1beta2", "v1", "v1beta2"}, "v1")

	var buf bytes.Buffer
	require.NoError(t, Encode(&buf, m))
	got, err := Decode(&buf)
	require.NoError(t, err)
	assert.Equal(t, []Resource{
		{GroupResource: schema.GroupResource{Resource: "configmaps"}, Versions: []string{"v1"}, Preferred: "v1"},
		{GroupResource: deployments, Versions: []string{"v1", "v1beta2"}, Preferred: "v1"},
	}, got.Resources(), "recorded versions survive the file; unrecorded ones come from the items")

	// "resources" before "itemCount": the sizing hint must not drop what was read.
	doc := `{"resources":[{"group":"apps","resource":"deployments","versions":["v1beta2","v1"],"preferred":"v1beta2"}],` +
		`"formatVersion":"1","itemCount":1,"groupVersions":[]}`
	got, err = Decode(strings.NewReader(doc))
	require.NoError(t, err)
	r, ok := got.Resource(deployments)
	require.True(t, ok)
	assert.Equal(t, []string{"v1", "v1beta2"}, r.Versions)
	assert.Equal(t, "v1beta2", r.Preferred)

	_, err = Decode(strings.NewReader(`{"formatVersion":"1","resources":[{"group":"apps","versions":[]}]}`))
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "/resources/0", de.Path)
}
