// Package jsontree decodes JSON into the trees of maps and slices that Kubernetes'
// unstructured objects are, as k8s.io/apimachinery/pkg/util/json does (integers as
// int64, other numbers as float64, the last of duplicate names, invalid UTF-8 as
// U+FFFD), in one pass over the tokens of json/v2's jsontext, without encoding/json's
// first pass that only validates.
package jsontree

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

var decoders = sync.Pool{New: func() any { return new(decoder) }}

type decoder struct {
	r   bytes.Reader
	dec jsontext.Decoder
}

// Object decodes data, which must hold one JSON object.
func Object(data []byte) (map[string]any, error) {
	d := decoders.Get().(*decoder)
	defer decoders.Put(d)
	d.r.Reset(data)
	d.dec.Reset(&d.r, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if d.dec.PeekKind() != '{' {
		if _, err := d.dec.ReadToken(); err != nil {
			return nil, err
		}
		return nil, errors.New("jsontree: not a JSON object")
	}
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		return nil, errors.New("jsontree: data after the JSON object")
	}
	return v.(map[string]any), nil
}

func (d *decoder) value() (any, error) {
	tok, err := d.dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{':
		m := make(map[string]any)
		for d.dec.PeekKind() != '}' {
			tok, err := d.dec.ReadToken()
			if err != nil {
				return nil, err
			}
			name := tok.String() // before the next read voids tok
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			m[name] = v
		}
		_, err := d.dec.ReadToken()
		return m, err
	case '[':
		s := []any{}
		for d.dec.PeekKind() != ']' {
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		_, err := d.dec.ReadToken()
		return s, err
	case '"':
		return tok.String(), nil
	case '0':
		raw := tok.String()
		if i, err := strconv.ParseInt(raw, 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return nil, fmt.Errorf("jsontree: number %s: %w", raw, err)
		}
		return f, nil
	case 't', 'f':
		return tok.Bool(), nil
	case 'n':
		return nil, nil
	}
	return nil, fmt.Errorf("jsontree: unexpected %v", tok)
}
