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

	// For MarshalSlot: the names of the value asked for, at depths 0 and 1; whether
	// the object being encoded at depth 1 is the one under slot[0]; and the offset of
	// the end of the value found, 0 until it is.
	slot   [2]string
	inSlot bool
	slotAt int64
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

// MarshalSlot appends to dst the encoding of obj, as Marshal encodes it, where
// obj[outer][inner] is an empty string, and returns where that string's bytes go: the
// bytes of a string that JSON needs not escape (digits, letters), put at data[at:at],
// make the JSON of obj with that string as obj[outer][inner]. at is -1 when
// obj[outer][inner] is not an empty string.
//
// A store encodes an object outside its lock, and has the one value only the lock gives
// (a resourceVersion) put in when the JSON is read.
func MarshalSlot(dst []byte, obj map[string]any, outer, inner string) (data []byte, at int, err error) {
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	e.buf.Reset()
	e.enc.Reset(&e.buf, jsonv1.DefaultOptionsV1())
	e.slot, e.inSlot, e.slotAt = [2]string{outer, inner}, false, 0
	defer func() { e.slot, e.inSlot = [2]string{}, false }()
	if err := e.object(obj); err != nil {
		return dst, -1, err
	}
	start := len(dst)
	data = append(dst, bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))...)
	if e.slotAt == 0 {
		return data, -1, nil
	}
	return data, start + int(e.slotAt) - 1, nil // between the quotes of ""
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
		if e.slot[0] != "" && e.depth <= 2 {
			if err := e.slotValue(k, m[k]); err != nil {
				return err
			}
			continue
		}
		if err := e.value(m[k]); err != nil {
			return err
		}
	}
	return e.enc.WriteToken(jsontext.EndObject)
}

// slotValue encodes v, the value of name k in an object at depth 0 or 1, and notes
// where it ends when it is MarshalSlot's empty string. Only the object that is the
// value of slot[0] at depth 0 is looked in: objects in arrays are deeper.
func (e *encoder) slotValue(k string, v any) error {
	switch {
	case e.depth == 1 && k == e.slot[0]:
		_, e.inSlot = v.(map[string]any)
		defer func() { e.inSlot = false }()
	case e.depth == 2 && e.inSlot && k == e.slot[1]:
		if s, ok := v.(string); ok && s == "" {
			if err := e.enc.WriteToken(jsontext.String("")); err != nil {
				return err
			}
			e.slotAt = e.enc.OutputOffset()
			return nil
		}
	}
	return e.value(v)
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
