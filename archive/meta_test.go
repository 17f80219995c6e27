package archive

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/restoregraph/restoregraph/internal/jsontree"
	"github.com/restoregraph/restoregraph/internal/strslab"
	"github.com/restoregraph/restoregraph/manifest"
)

var metaDocs = []string{
	podJSON,
	`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop","uid":"u-1","labels":{"b":"2","a":"1"},"annotations":{"x":"y"},"ownerReferences":[{"apiVersion":"v1","uid":"o-1"},{"uid":"o-2","kind":"K"}]},"spec":{"replicas":3,"template":{"metadata":{"name":"not-this"}}},"status":{}}`,
	`{"metadata":{"name":"first","labels":{"a":"1"}},"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"last","namespace":"n"}}`,
	`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n\u0061me","namespace":"ns","labels":{"k":"1","k":"2","a\"b":"q"},"ownerReferences":[{"uid":"a"}],"ownerReferences":[{"uid":"b"}]}}`,
	"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"bad\xffutf8\",\"labels\":null,\"annotations\":{},\"ownerReferences\":null}}",
	`{"apiVersion":"v1","kind":"Namespace","metadata":null}`,
	` {"apiVersion" : "v1" , "kind":"Namespace" , "metadata" : { "name" : "spaced" } } `,
}

// metaOf is the metadata a restore finds in data, decoded as a restore decodes it
// (jsontree.Object): what the reader must agree with.
func metaOf(t *testing.T, data []byte) objectMeta {
	obj, err := jsontree.Object(data)
	require.NoError(t, err, "%q", data)
	var m objectMeta
	m.apiVersion, _ = obj["apiVersion"].(string)
	m.kind, _ = obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	m.name, _ = md["name"].(string)
	m.namespace, _ = md["namespace"].(string)
	uid, _ := md["uid"].(string)
	m.uid = types.UID(uid)
	pairs := func(v any) manifest.Pairs {
		var p manifest.Pairs
		for k, v := range v.(map[string]any) {
			p = append(p, manifest.Pair{Key: k, Value: v.(string)})
		}
		return p
	}
	if l, ok := md["labels"].(map[string]any); ok && len(l) > 0 {
		m.labels = pairs(l)
	}
	if a, ok := md["annotations"].(map[string]any); ok && len(a) > 0 {
		m.annotations = pairs(a)
	}
	refs, _ := md["ownerReferences"].([]any)
	for _, ref := range refs {
		if uid, ok := ref.(map[string]any)["uid"].(string); ok {
			m.owners = append(m.owners, types.UID(uid))
		}
	}
	return m
}

func assertSameMeta(t *testing.T, want, got objectMeta, doc []byte) {
	t.Helper()
	assert.ElementsMatch(t, want.labels, got.labels, "%q", doc)
	assert.ElementsMatch(t, want.annotations, got.annotations, "%q", doc)
	assert.IsNonDecreasing(t, keys(got.labels))
	want.labels, want.annotations, got.labels, got.annotations = nil, nil, nil, nil
	assert.Equal(t, want, got, "%q", doc)
}

func keys(p manifest.Pairs) []string {
	var k []string
	for _, kv := range p {
		k = append(k, kv.Key)
	}
	return k
}

// The metadata read from a body is what a restore decodes from it: of duplicate names
// the last, escapes decoded, invalid UTF-8 as U+FFFD, an owner reference's UID when it
// has one.
func TestMetaReaderAgreesWithTheRestoresDecode(t *testing.T) {
	r := newMetaReader(strslab.New(1 << 10))
	for _, doc := range metaDocs {
		got, err := r.read([]byte(doc))
		require.NoError(t, err, doc)
		assertSameMeta(t, metaOf(t, []byte(doc)), got, []byte(doc))
	}
}

// Objects with the same labels (an application's) share one set, in whatever order
// their bodies list the pairs; a set that differs in one value, or that only hashes as
// one read before, is its own.
func TestMetaReaderSharesEqualSets(t *testing.T) {
	r := newMetaReader(strslab.New(1 << 10))
	read := func(labels string) manifest.Pairs {
		m, err := r.read([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":` + labels + `}}`))
		require.NoError(t, err)
		return m.labels
	}
	a := read(`{"app":"web","tier":"front"}`)
	b := read(`{"tier":"front","app":"web"}`)
	c := read(`{"app":"web","tier":"back"}`)
	assert.Same(t, &a[0], &b[0])
	assert.NotSame(t, &a[0], &c[0])
	assert.Equal(t, manifest.Pairs{{Key: "app", Value: "web"}, {Key: "tier", Value: "back"}}, c)

	// Another set under a's hash, as two sets whose hashes collide would be: a is read
	// as a, not as the set kept.
	for sum, set := range r.sets {
		if &set[0] == &a[0] {
			r.sets[sum] = manifest.Pairs{{Key: "app", Value: "other"}, {Key: "tier", Value: "front"}}
		}
	}
	assert.Equal(t, manifest.Pairs{{Key: "app", Value: "web"}, {Key: "tier", Value: "front"}}, read(`{"app":"web","tier":"front"}`))
}

func TestMetaReaderRefuses(t *testing.T) {
	r := newMetaReader(strslab.New(1 << 10))
	for _, doc := range []string{
		``, `[]`, `{"apiVersion":`, `{"apiVersion":1}`, `{"kind":null}`, `{"metadata":[]}`, `{"metadata":{"name":5}}`,
		`{"metadata":{"labels":{"a":1}}}`, `{"metadata":{"ownerReferences":{}}}`, `{"metadata":{"ownerReferences":[{"uid":7}]}}`,
		`{"spec":{"a":[1,}}`, `{"apiVersion":"v1"} {}`, "{\"spec\":\"a\x01b\"}",
	} {
		_, err := r.read([]byte(doc))
		assert.ErrorIs(t, err, errNotObject, doc)
	}
}

// Whatever the reader accepts, a restore decodes, to the same metadata; but for a
// number beyond float64's range, which the read checks only as JSON, as jsontext does.
func FuzzMetaReader(f *testing.F) {
	for _, doc := range metaDocs {
		f.Add([]byte(doc))
	}
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"n":1e999}}`))
	r := newMetaReader(strslab.New(1 << 10))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := r.read(data)
		if err != nil {
			return
		}
		if _, err := jsontree.Object(data); err != nil && strings.Contains(err.Error(), "value out of range") {
			return
		}
		assertSameMeta(t, metaOf(t, data), got, data)
	})
}

// BenchmarkMetaRead reads the metadata of every body of a backup Velero wrote of a
// real cluster (testdata/velero), as a read of a backup without a manifest does.
func BenchmarkMetaRead(b *testing.B) {
	f, err := os.Open("../testdata/velero/shop-and-fleet/shop-and-fleet.tar.gz")
	require.NoError(b, err)
	defer f.Close()
	e, err := newEntries(f, Options{}.withDefaults())
	require.NoError(b, err)
	defer e.close()
	var bodies [][]byte
	size := 0
	for {
		name, _, data, err := e.next()
		if err == io.EOF {
			break
		}
		require.NoError(b, err)
		if strings.HasPrefix(name, resourcesDir+"/") {
			bodies = append(bodies, bytes.Clone(data))
			size += len(data)
		}
	}
	r := newMetaReader(strslab.New(1 << 16))
	b.SetBytes(int64(size))
	for b.Loop() {
		for _, body := range bodies {
			if _, err := r.read(body); err != nil {
				b.Fatal(err)
			}
		}
	}
}
