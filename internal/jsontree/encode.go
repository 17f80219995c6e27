package jsontree

import (
	"bytes"
	"math"
	"slices"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

var encoders = sync.Pool{New: func() any { return new(encoder) }}

type encoder struct {
	buf   bytes.Buffer
	enc   jsontext.Encoder
	names [][]string // a stack of scratch slices, one for each depth of objects
	depth int
}

// Marshal encodes obj as encoding/json encodes it: object names sorted, '<', '>', '&',
// U+2028 and U+2029 escaped, invalid UTF-8 as U+FFFD. It walks the tree itself, without
// reflection, where it holds what Object decodes (maps, slices, strings, int64, float64,
// bools and nulls); a value of any other type is encoded by json/v2 with encoding/json's
// options.
func Marshal(obj map[string]any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	e.buf.Reset()
	e.enc.Reset(&e.buf, jsonv1.DefaultOptionsV1())
	if err := e.object(obj); err != nil {
		return nil, err
	}
	// The encoder ends a top-level value with a newline, which Marshal does not.
	return bytes.Clone(bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))), nil
}

func (e *encoder) object(m map[string]any) error {
	if m == nil {
		return e.enc.WriteToken(jsontext.Null)
	}
	if e.depth == len(e.names) {
		e.names = append(e.names, nil)
	}
	names := e.names[e.depth][:0]
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	e.names[e.depth] = names
	e.depth++
	defer func() { e.depth-- }()
	if err := e.enc.WriteToken(jsontext.BeginObject); err != nil {
		return err
	}
	for _, k := range names {
		if err := e.enc.WriteToken(jsontext.String(k)); err != nil {
			return err
		}
		if err := e.value(m[k]); err != nil {
			return err
		}
	}
	return e.enc.WriteToken(jsontext.EndObject)
}

func (e *encoder) value(v any) error {
	switch v := v.(type) {
	case map[string]any:
		return e.object(v)
	case []any:
		if v == nil {
			return e.enc.WriteToken(jsontext.Null)
		}
		if err := e.enc.WriteToken(jsontext.BeginArray); err != nil {
			return err
		}
		for _, x := range v {
			if err := e.value(x); err != nil {
				return err
			}
		}
		return e.enc.WriteToken(jsontext.EndArray)
	case string:
		return e.enc.WriteToken(jsontext.String(v))
	case int64:
		return e.enc.WriteToken(jsontext.Int(v))
	case float64:
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			return e.enc.WriteToken(jsontext.Float(v))
		}
	case bool:
		return e.enc.WriteToken(jsontext.Bool(v))
	case nil:
		return e.enc.WriteToken(jsontext.Null)
	}
	return jsonv2.MarshalEncode(&e.enc, v, jsonv1.DefaultOptionsV1())
}
