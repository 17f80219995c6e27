package jsontree

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kjson "k8s.io/apimachinery/pkg/util/json"
)

var docs = []string{
	`{}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}},"spec":{"containers":[{"name":"app","ports":[{"containerPort":8080}]}]}}`,
	`{"int":3,"neg":-7,"big":9223372036854775807,"bigger":9223372036854775808,"float":1.5,"whole float":1.0,"exp":1e3,"tiny":-2.5E-7}`,
	`{"t":true,"f":false,"n":null,"empty object":{},"empty array":[],"nested":[[1,[2]],{"a":[]}]}`,
	`{"escaped":"a\"b\\c\/d\u00e9\ud83d\ude00\n","key\u0041":"x"}`,
	"{\"invalid utf-8\":\"a\xffb\"}",
	`{"dup":1,"dup":2}`,
	` { "spaced" : [ 1 , 2 ] } `,
}

// Object decodes as k8s.io/apimachinery's util/json does.
func TestObjectDecodesAsAPIMachinery(t *testing.T) {
	for _, doc := range docs {
		var want map[string]any
		require.NoError(t, kjson.Unmarshal([]byte(doc), &want), doc)
		got, err := Object([]byte(doc))
		require.NoError(t, err, doc)
		assert.Equal(t, want, got, doc)
	}
}

func TestObjectRefusesWhatIsNotOneObject(t *testing.T) {
	for _, doc := range []string{``, `[]`, `"s"`, `{"a":1}{}`, `{"a":1`, `{"a":1,}`, `{"a":01}`, `{a:1}`, `{"a":1} x`} {
		_, err := Object([]byte(doc))
		assert.Error(t, err, doc)
	}
}

func FuzzObject(f *testing.F) {
	for _, doc := range docs {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want map[string]any
		wantErr := kjson.Unmarshal(data, &want)
		got, err := Object(data)
		if wantErr != nil || want == nil {
			return // what encoding/json refuses may be refused or not; a JSON null is not an object
		}
		require.NoError(t, err, "%q", data)
		assert.Equal(t, want, got, "%q", data)
	})
}

func BenchmarkObject(b *testing.B) {
	pod := []byte(docs[1])
	b.Run("jsontree", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Object(pod); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("apimachinery", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]any
			if err := kjson.Unmarshal(pod, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
