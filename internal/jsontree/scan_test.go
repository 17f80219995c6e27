package jsontree

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kjson "k8s.io/apimachinery/pkg/util/json"
)

// valid is what the scan must agree with: jsontext's check with the options Object
// decodes with.
func valid(data []byte) bool {
	return jsontext.Value(data).IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
}

// scanned checks data as one JSON value, as Members and Elements check theirs.
func scanned(data []byte) error {
	i, err := skip(data, space(data, 0))
	if err != nil {
		return err
	}
	return end(data, i)
}

// walked checks data as one JSON value the way a reader of a few members reads it:
// every object and array with ObjectAt and ArrayAt, each value where it is, scalars
// with SkipAt; no more deeply nested than the scan allows.
func walked(data []byte) error {
	var value func(at, depth int) (int, error)
	value = func(at, depth int) (int, error) {
		if c := byteAt(data, at); (c == '{' || c == '[') && depth == maxDepth {
			return 0, errors.New("nested too deeply")
		}
		switch byteAt(data, at) {
		case '{':
			return ObjectAt(data, at, func(_ []byte, at int) (int, error) { return value(at, depth+1) })
		case '[':
			return ArrayAt(data, at, func(at int) (int, error) { return value(at, depth+1) })
		}
		return SkipAt(data, at)
	}
	i, err := value(space(data, 0), 0)
	if err != nil {
		return err
	}
	return End(data, i)
}

// ObjectAt hands out each member's name and its value's offset, and goes on where the
// caller says the value ends; ArrayAt likewise.
func TestObjectAtReadsWhereTheCallerEnds(t *testing.T) {
	data := []byte(` {"a" : [1, {"b":"c"}], "d":{} ,"\u0065":null} x`)
	var names []string
	end, err := ObjectAt(data, 0, func(name []byte, at int) (int, error) {
		names = append(names, string(name))
		if string(name) != "a" {
			return SkipAt(data, at)
		}
		return ArrayAt(data, at, func(at int) (int, error) {
			names = append(names, fmt.Sprintf("a@%c", data[at]))
			return SkipAt(data, at)
		})
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "a@1", "a@{", "d", "e"}, names)
	assert.Equal(t, " x", string(data[end:]), "ends just past the object")
	assert.Error(t, End(data, end), "what follows is the caller's to check")

	stop := errors.New("stop")
	_, err = ObjectAt([]byte(`{"a":1}`), 0, func([]byte, int) (int, error) { return 0, stop })
	assert.Same(t, stop, err, "the callback's error, as it is")
	_, err = ObjectAt([]byte(`{"a":1 "b":2}`), 0, func(_ []byte, at int) (int, error) { return at + 1, nil })
	assert.Error(t, err, "what follows a value is checked where the callback ends it")
	end, err = ArrayAt([]byte(`[ ]`), 0, func(int) (int, error) { t.Fatal("an empty array has no element"); return 0, nil })
	require.NoError(t, err)
	assert.Equal(t, 3, end)
}

// Members hands out each member's name and value as Object decodes them, the last of
// duplicate names winning in the map, and checks what it passes over.
func TestMembersAgreeWithObject(t *testing.T) {
	for _, doc := range docs {
		want, err := Object([]byte(doc))
		require.NoError(t, err, doc)
		got := map[string]any{}
		require.NoError(t, Members([]byte(doc), func(name, value []byte) error {
			var v any
			if err := kjson.Unmarshal(value, &v); err != nil {
				return err
			}
			got[string(name)] = v
			return nil
		}), doc)
		assert.Equal(t, want, got, doc)
	}
}

func TestElements(t *testing.T) {
	var got []string
	require.NoError(t, Elements([]byte(` [ 1 , "a" ,{"b":[]}, [ ] ,null] `), func(v []byte) error {
		got = append(got, string(v))
		return nil
	}))
	assert.Equal(t, []string{`1`, `"a"`, `{"b":[]}`, `[ ]`, `null`}, got)
	require.NoError(t, Elements([]byte(`[]`), func([]byte) error { t.Fatal("an empty array has no element"); return nil }))
	assert.Error(t, Elements([]byte(`{}`), func([]byte) error { return nil }))
	assert.Error(t, Elements([]byte(`[1,]`), func([]byte) error { return nil }))
}

// A callback's error stops the scan and is returned as it is.
func TestMembersStopAtTheCallersError(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := Members([]byte(`{"a":1,"b":2,"c":`), func(name, _ []byte) error {
		n++
		if string(name) == "b" {
			return stop
		}
		return nil
	})
	assert.Same(t, stop, err)
	assert.Equal(t, 2, n)
}

func TestScanRefuses(t *testing.T) {
	for _, doc := range []string{
		``, ` `, `{`, `}`, `[`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`, `{a:1}`, `{"a":1 "b":2}`,
		`01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `--1`, `tru`, `nul`, `falsey`, `"abc`, `"\x"`, `"\u12"`, `"\u12g4"`,
		"\"a\nb\"", "\"\x00\"", `{"a":1}{}`, `{"a":1} x`, `[1]]`, `{"a":[}`, `{"a":{]}`, `nan`, `'a'`,
	} {
		assert.False(t, valid([]byte(doc)), "the oracle accepts %q", doc)
		assert.Error(t, scanned([]byte(doc)), doc)
		assert.Error(t, walked([]byte(doc)), doc)
	}
}

// The eight-byte scan of strings finds what stops it at every offset within a word,
// and past one.
func TestStringStopsAtEveryOffset(t *testing.T) {
	for n := range 20 {
		pad := strings.Repeat("x", n)
		for _, doc := range []string{
			`"` + pad + `"`,
			`"` + pad + `\"` + pad + `"`,
			`"` + pad + `\\"`,
			`"` + pad + `\u00e9` + pad + `"`,
			`"` + pad + "\xff\xfe" + pad + `"`,
			`"` + pad + "\t" + pad + `"`,
			`"` + pad + `\q"`,
			`"` + pad,
			`["` + pad + `",1]`,
		} {
			require.Equal(t, valid([]byte(doc)), scanned([]byte(doc)) == nil, "%q", doc)
		}
	}
}

func TestScanNestsAsDeepAsJSONText(t *testing.T) {
	deep := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	assert.True(t, valid([]byte(deep)))
	assert.NoError(t, scanned([]byte(deep)))
	deeper := "[" + deep + "]"
	assert.False(t, valid([]byte(deeper)))
	assert.Error(t, scanned([]byte(deeper)))
	assert.NoError(t, walked([]byte(deep)))
	assert.Error(t, walked([]byte(deeper)))
}

func TestUnquote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`""`, ""}, {`"plain"`, "plain"}, {`"a\"b\\c\/d\u00e9\ud83d\ude00\n"`, "a\"b\\c/dé😀\n"},
		{"\"a\xffb\"", "a\uFFFDb"}, {`"\ud800"`, "\uFFFD"},
	} {
		got, ok := Unquote(nil, []byte(c.in))
		require.True(t, ok, c.in)
		assert.Equal(t, c.want, string(got), c.in)
		obj, err := Object([]byte(`{"k":` + c.in + `}`))
		require.NoError(t, err)
		assert.Equal(t, obj["k"], string(got), "as Object decodes %s", c.in)
	}
	_, ok := Unquote(nil, []byte(`1`))
	assert.False(t, ok)
}

// The scan accepts exactly what jsontext accepts with Object's options, and Members,
// on an object, gives what Object decodes.
func FuzzScan(f *testing.F) {
	for _, doc := range docs {
		f.Add([]byte(doc))
	}
	f.Add([]byte(`[1,"a\u0000",{"b":null,"c":-0.5e+7}]`))
	f.Add([]byte(`"\ud800\udc00"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ok := scanned(data) == nil
		if ok != valid(data) {
			t.Fatalf("scan accepts %q: %v; jsontext: %v", data, ok, !ok)
		}
		if werr := walked(data); (werr == nil) != ok {
			t.Fatalf("%q: the scan: %v; ObjectAt and ArrayAt: %v", data, ok, werr)
		}
		want, err := Object(data)
		got := map[string]any{}
		merr := Members(data, func(name, value []byte) error {
			v, err := Object([]byte(`{"v":` + string(value) + `}`))
			if err != nil {
				return err
			}
			got[string(name)] = v["v"]
			return nil
		})
		if (err == nil) != (merr == nil) {
			t.Fatalf("%q: Object: %v; Members: %v", data, err, merr)
		}
		if err == nil {
			assert.Equal(t, want, got)
		}
	})
}

// Omit leaves out every member of the names given, the last of duplicates too, and
// keeps the rest as Object decodes them, each as the data has it; data itself when
// none is named; and refuses what Members refuses.
func TestOmit(t *testing.T) {
	for _, doc := range docs {
		want, err := Object([]byte(doc))
		require.NoError(t, err, doc)
		var names []string
		for name := range want {
			names = append(names, name)
			break // one of them, where there are any
		}
		got, err := Omit([]byte(doc), append(names, "no such member"), nil)
		require.NoError(t, err, doc)
		if len(names) == 0 {
			assert.Equal(t, doc, string(got), "nothing to leave out: the data itself")
			continue
		}
		delete(want, names[0])
		kept, err := Object(got)
		require.NoError(t, err, "%s gave %s", doc, got)
		assert.Equal(t, want, kept, doc)
	}
	var seen []string
	got, err := Omit([]byte(` {"a" : 1, "b":{ "c": [1, 2] },"a":3,"\u0064":4, "e":"f"} `), []string{"a", "d"}, func(name, value []byte) error {
		seen = append(seen, string(name)+"="+string(value))
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, `{"b":{ "c": [1, 2] },"e":"f"}`, string(got))
	assert.Equal(t, []string{"a=1", `b={ "c": [1, 2] }`, "a=3", "d=4", `e="f"`}, seen, "each member handed out")
	got, err = Omit([]byte(`{"a":1}`), []string{"a"}, nil)
	require.NoError(t, err)
	assert.Equal(t, `{}`, string(got))
	into := make([]byte, 0, 64)
	got, err = OmitInto([]byte(`{"a":1,"b":[2]}`), []string{"a"}, nil, func(n int) []byte {
		assert.GreaterOrEqual(t, n, len(`{"b":[2]}`), "room for what is kept")
		return into
	})
	require.NoError(t, err)
	assert.Equal(t, `{"b":[2]}`, string(got))
	assert.Same(t, &into[:1][0], &got[0], "written where alloc said")
	data := []byte(`{"a":1}`)
	got, err = Omit(data, []string{"b"}, nil)
	require.NoError(t, err)
	assert.Same(t, &data[0], &got[0], "data itself")
	for _, doc := range []string{`{"a":1,}`, `{"a"}`, `[1]`, `{"a":1} x`, `{"b":1,"a":[}`} {
		_, err := Omit([]byte(doc), []string{"a"}, nil)
		assert.Error(t, err, doc)
	}
	stop := errors.New("stop")
	_, err = Omit([]byte(`{"a":1,"b":2}`), []string{"a"}, func(name, _ []byte) error { return stop })
	assert.Same(t, stop, err, "the callback's error, as it is")

	// More members than Omit keeps on its stack.
	var long, want strings.Builder
	long.WriteString(`{"drop":0`)
	want.WriteString(`{`)
	for i := range 40 {
		fmt.Fprintf(&long, `,"m%d":%d`, i, i)
		if i > 0 {
			want.WriteString(`,`)
		}
		fmt.Fprintf(&want, `"m%d":%d`, i, i)
	}
	long.WriteString(`}`)
	want.WriteString(`}`)
	got, err = Omit([]byte(long.String()), []string{"drop"}, nil)
	require.NoError(t, err)
	assert.Equal(t, want.String(), string(got))
}
