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
		if md, ok := tree["metadata"].(map[string]any); ok {
			md["resourceVersion"] = ""
			assertSlot(t, tree)
		}
	})
}

// MarshalSlot's JSON, with a resourceVersion put where it says, is Marshal's of the
// object with that resourceVersion, wherever else the same name and an empty string
// appear; and where there is no slot, it says so.
func TestMarshalSlot(t *testing.T) {
	for i := range 5 {
		pod := mustObject(t, podJSON(i))
		pod["metadata"].(map[string]any)["resourceVersion"] = ""
		assertSlot(t, pod)
	}
	decoys := mustObject(t, []byte(`{
		"data": {"resourceVersion": "", "metadata": ""},
		"items": [{"metadata": {"resourceVersion": ""}}],
		"metadata": {"annotations": {"resourceVersion": ""}, "name": "x", "resourceVersion": "", "uid": "u"},
		"spec": {"metadata": {"resourceVersion": ""}, "resourceVersion": ""}}`))
	assertSlot(t, decoys)

	for _, tree := range []map[string]any{
		{"metadata": map[string]any{"name": "x"}},
		{"metadata": map[string]any{"resourceVersion": "7"}},
		{"metadata": []any{map[string]any{"resourceVersion": ""}}},
		{"spec": map[string]any{"metadata": map[string]any{"resourceVersion": ""}}},
	} {
		data, at, err := MarshalSlot(nil, tree, "metadata", "resourceVersion")
		require.NoError(t, err)
		assert.Equal(t, -1, at, "%s", data)
		want, err := Marshal(tree)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(data))
	}
}

// assertSlot checks MarshalSlot on tree, whose metadata.resourceVersion is "".
func assertSlot(t *testing.T, tree map[string]any) {
	t.Helper()
	const rv = "18446744073709551615"
	data, at, err := MarshalSlot([]byte("prefix"), tree, "metadata", "resourceVersion")
	require.NoError(t, err)
	require.GreaterOrEqual(t, at, 0, "%s", data)
	require.Equal(t, "prefix", string(data[:6]), "appended to dst")
	got := string(data[6:at]) + rv + string(data[at:])
	tree["metadata"].(map[string]any)["resourceVersion"] = rv
	want, err := Marshal(tree)
	require.NoError(t, err)
	assert.Equal(t, string(want), got)
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
