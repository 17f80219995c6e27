package jsontree

import (
	"encoding/json"
	"math"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kjson "k8s.io/apimachinery/pkg/util/json"
)

// Marshal encodes as encoding/json does, byte for byte, what decoded objects hold and
// what code puts in them (other numbers, typed slices, nil maps and slices); and as
// json/v2 under encoding/json's options does (which it replaces in the embedded
// server), byte for byte, invalid UTF-8 too: both write U+FFFD for it, encoding/json
// escaped and json/v2 as it is.
func TestMarshalEncodesAsEncodingJSON(t *testing.T) {
	invalid := map[string]any{"bad": "a\xffb", "\xff": "name"}
	got, err := Marshal(invalid)
	require.NoError(t, err)
	want, err := marshalV2(invalid)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))

	trees := []map[string]any{
		{},
		{"b": int64(-7), "a": 1.5, "c": []any{"x", nil, true, false, map[string]any{}}, "e": 1e21, "f": 1e-7, "g": 0.000001, "h": 100.0},
		{"html": "<a href=\"x\">&amp;</a>", "sep": "\u2028\u2029", "ctl": "\x00\x1f\t"},
		{"int": 3, "int32": int32(-4), "uint8": uint8(200), "float32": float32(0.1), "strings": []string{"a"}, "map": map[string]string{"z": "1", "y": "2"}},
		{"nil map": map[string]any(nil), "nil slice": []any(nil), "deep": map[string]any{"z": map[string]any{"y": []any{map[string]any{"b": 1.0, "a": int64(2)}}}}},
	}
	for i := range 20 {
		trees = append(trees, map[string]any{"pod": mustObject(t, podJSON(i))})
	}
	for _, tree := range trees {
		want, err := json.Marshal(tree)
		require.NoError(t, err)
		got, err := Marshal(tree)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
		v2, err := marshalV2(tree)
		require.NoError(t, err)
		assert.Equal(t, string(v2), string(got))
	}
}

// Every byte, alone and in a rune, in a name and in a value, is written as json/v2
// writes it under encoding/json's options: escaped, as it is, or as U+FFFD.
func TestMarshalQuotesEveryByte(t *testing.T) {
	for c := range 256 {
		for _, s := range []string{string([]byte{byte(c)}), "a" + string([]byte{byte(c)}) + "b", "\xe2\x80" + string([]byte{byte(c)}), "é" + string([]byte{byte(c)})} {
			tree := map[string]any{"v": s, s: int64(1)}
			want, err := marshalV2(tree)
			require.NoError(t, err)
			got, err := Marshal(tree)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got), "%q", s)
		}
	}
}

func TestMarshalRefusesWhatEncodingJSONRefuses(t *testing.T) {
	for _, v := range []any{math.NaN(), math.Inf(1), func() {}} {
		_, want := json.Marshal(map[string]any{"v": v})
		require.Error(t, want)
		_, err := Marshal(map[string]any{"v": v})
		assert.Error(t, err, "%v", v)
	}
}

func FuzzMarshal(f *testing.F) {
	for _, doc := range docs {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var tree map[string]any
		if kjson.Unmarshal(data, &tree) != nil || tree == nil {
			return
		}
		want, err := json.Marshal(tree)
		require.NoError(t, err)
		got, err := Marshal(tree)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%q", data)
		assertCut(t, tree)
	})
}

// metadataCuts is what the embedded server leaves out of the JSON it stores.
var metadataCuts = &CutSpec{Outer: "metadata", Names: []string{"name", "namespace", "resourceVersion", "uid"}, List: "ownerReferences", Item: "uid"}

// MarshalCut's JSON, with what it cut put back where it says, is Marshal's; it cuts the
// metadata's strings it is asked for and each owner's UID, and no other value of the
// same name, nor a value JSON escapes.
func TestMarshalCut(t *testing.T) {
	for i := range 5 {
		pod := mustObject(t, podJSON(i))
		cuts := assertCut(t, pod)
		var names []int
		for _, c := range cuts {
			names = append(names, c.Name)
		}
		assert.Equal(t, []int{0, 1, -1, 2, 3}, names, "name, namespace, the owner's UID, resourceVersion, UID")
	}
	decoys := mustObject(t, []byte(`{
		"data": {"resourceVersion": "", "metadata": "", "uid": "d"},
		"items": [{"metadata": {"resourceVersion": "", "name": "i"}}],
		"metadata": {"annotations": {"resourceVersion": "", "uid": "a"}, "labels": {"name": "l"},
			"ownerReferences": [{"uid": "o1", "name": "n", "x": {"uid": "deep"}, "l": [{"uid": "deep"}]}, "not an object", [{"uid": "in a list"}], {"uid": 7}, {"uid": "o<2>"}, {"uid": "o3"}],
			"finalizers": ["uid"], "name": "x\n", "namespace": {"uid": "nested"}, "resourceVersion": "", "uid": "u"},
		"spec": {"metadata": {"resourceVersion": ""}, "resourceVersion": "", "ownerReferences": [{"uid": "s"}]}}`))
	cuts := assertCut(t, decoys)
	assert.Equal(t, []Cut{{Name: -1, Value: "o1"}, {Name: -1, Value: "o3"}, {Name: 2, Value: ""}, {Name: 3, Value: "u"}}, withoutAt(cuts),
		"an escaped name, a number and a non-string are kept; nothing outside the metadata is cut")

	for _, tree := range []map[string]any{
		{"metadata": []any{map[string]any{"resourceVersion": ""}}},
		{"spec": map[string]any{"metadata": map[string]any{"resourceVersion": ""}}},
		{"metadata": map[string]any{"ownerReferences": map[string]any{"uid": "x"}}},
	} {
		data, cuts, err := MarshalCut(nil, tree, metadataCuts, nil)
		require.NoError(t, err)
		assert.Empty(t, cuts, "%s", data)
		want, err := Marshal(tree)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(data))
	}
}

// assertCut checks MarshalCut on tree, appending to a buffer and to cuts that hold
// something already, and returns the cuts it made.
func assertCut(t *testing.T, tree map[string]any) []Cut {
	t.Helper()
	before := []Cut{{At: -7, Name: 9, Value: "before"}}
	data, cuts, err := MarshalCut([]byte("prefix"), tree, metadataCuts, before)
	require.NoError(t, err)
	require.Equal(t, "prefix", string(data[:6]), "appended to dst")
	require.Equal(t, before[0], cuts[0], "appended to cuts")
	cuts = cuts[1:]
	var b []byte
	prev := 6
	for _, c := range cuts {
		require.GreaterOrEqual(t, c.At, prev)
		b = append(append(b, data[prev:c.At]...), c.Value...)
		prev = c.At
	}
	b = append(b, data[prev:]...)
	want, err := Marshal(tree)
	require.NoError(t, err)
	require.Equal(t, string(want), string(b))
	return cuts
}

func withoutAt(cuts []Cut) []Cut {
	out := make([]Cut, len(cuts))
	for i, c := range cuts {
		out[i] = Cut{Name: c.Name, Value: c.Value}
	}
	return out
}

func mustObject(t *testing.T, data []byte) map[string]any {
	obj, err := Object(data)
	require.NoError(t, err)
	return obj
}

// BenchmarkMarshal encodes a thousand Pods one after the other, as the embedded
// server stores them, and the same with json/v2's reflection under encoding/json's
// options, which Marshal replaces.
func BenchmarkMarshal(b *testing.B) {
	pods := make([]map[string]any, 1000)
	for i := range pods {
		var err error
		if pods[i], err = Object(podJSON(i)); err != nil {
			b.Fatal(err)
		}
	}
	for _, m := range []struct {
		name string
		f    func(map[string]any) ([]byte, error)
	}{{"jsontree", Marshal}, {"jsonv2", marshalV2}} {
		b.Run(m.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := m.f(pods[i%len(pods)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func marshalV2(obj map[string]any) ([]byte, error) {
	return jsonv2.Marshal(obj, jsonv1.DefaultOptionsV1())
}
