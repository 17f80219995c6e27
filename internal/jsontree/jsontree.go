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
	"hash/maphash"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

var decoders = sync.Pool{New: func() any { return &decoder{seed: maphash.MakeSeed()} }}

type decoder struct {
	r   bytes.Reader
	dec jsontext.Decoder
	// strs holds strings this decoder made lately, by a hash of their bytes, each
	// beside itself boxed as a value: the names of an object's fields and most of its
	// short values ("metadata", "TCP", a namespace's name) recur from object to object,
	// and a recurring one then costs no allocation, neither for its bytes nor for its
	// box. The strings are shared between the trees decoded; strings do not change.
	strs    [internSlots]interned
	seed    maphash.Seed
	scratch []byte // a string with escapes, unquoted
	// members holds the members of the objects being decoded, the innermost last.
	members []member
}

// member is a member of an object: as decoded, before its map is made; as encoded, as
// the encoder sorts them.
type member struct {
	name string
	v    any
}

type interned struct {
	s string
	v any // s
}

const (
	internSlots = 4096 // a power of two
	internMax   = 64   // longer strings are made each time, neither hashed nor kept
)

// Object decodes data, which must hold one JSON object.
func Object(data []byte) (map[string]any, error) {
	d := decoders.Get().(*decoder)
	defer func() {
		clear(d.members) // what a decode that failed left
		d.members = d.members[:0]
		decoders.Put(d)
	}()
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
	switch d.dec.PeekKind() {
	case '{':
		if _, err := d.dec.ReadToken(); err != nil {
			return nil, err
		}
		// The members are gathered first, and the map made at their number: a map
		// that grows past eight entries has made, filled and dropped a smaller one.
		base := len(d.members)
		for d.dec.PeekKind() != '}' {
			raw, err := d.dec.ReadValue()
			if err != nil {
				return nil, err
			}
			name, _ := d.str(raw, false) // before the next read voids raw
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			d.members = append(d.members, member{name, v})
		}
		m := make(map[string]any, len(d.members)-base)
		for _, e := range d.members[base:] {
			m[e.name] = e.v // of duplicate names, the last
		}
		clear(d.members[base:]) // the values are the tree's, not the decoder's
		d.members = d.members[:base]
		_, err := d.dec.ReadToken()
		return m, err
	case '[':
		if _, err := d.dec.ReadToken(); err != nil {
			return nil, err
		}
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
		raw, err := d.dec.ReadValue()
		if err != nil {
			return nil, err
		}
		_, v := d.str(raw, true)
		return v, nil
	case '0':
		raw, err := d.dec.ReadValue()
		if err != nil {
			return nil, err
		}
		if i, ok := smallInt(raw); ok {
			return i, nil
		}
		if i, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return nil, fmt.Errorf("jsontree: number %s: %w", raw, err)
		}
		return f, nil
	}
	tok, err := d.dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case 't', 'f':
		return tok.Bool(), nil
	case 'n':
		return nil, nil
	}
	return nil, fmt.Errorf("jsontree: unexpected %v", tok)
}

// str returns the string that raw, a JSON string as the decoder read it (quoted,
// valid but for its UTF-8), stands for, and when boxed is set, the string boxed as a
// value too. Invalid UTF-8 becomes U+FFFD, as encoding/json decodes it.
func (d *decoder) str(raw []byte, boxed bool) (string, any) {
	b := raw[1 : len(raw)-1]
	for _, c := range b {
		if c == '\\' || c >= utf8.RuneSelf {
			// The decoder checked the string; what AppendUnquote can still report is
			// the invalid UTF-8 it replaced.
			d.scratch, _ = jsontext.AppendUnquote(d.scratch[:0], raw)
			b = d.scratch
			break
		}
	}
	if len(b) > internMax {
		s := string(b)
		if !boxed {
			return s, nil
		}
		return s, s
	}
	slot := &d.strs[maphash.Bytes(d.seed, b)&(internSlots-1)]
	if slot.v == nil || slot.s != string(b) {
		s := string(b)
		*slot = interned{s: s, v: s}
	}
	return slot.s, slot.v
}

// smallInt parses raw, a JSON number, when it is an integer of at most 18 digits,
// which is every integer a Kubernetes object holds but the rarest, without making a
// string of it for strconv.
func smallInt(raw []byte) (int64, bool) {
	digits := raw
	if len(raw) > 0 && raw[0] == '-' {
		digits = raw[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(raw) {
		n = -n
	}
	return n, true
}
