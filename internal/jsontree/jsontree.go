// Package jsontree decodes JSON into the trees of maps and slices that Kubernetes'
// unstructured objects are, as k8s.io/apimachinery/pkg/util/json does (integers as
// int64, other numbers as float64, the last of duplicate names, invalid UTF-8 as
// U+FFFD), in one pass over the bytes with the package's own scan, which checks them as
// json/v2's jsontext does, without encoding/json's first pass that only validates.
package jsontree

import (
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

var decoders = sync.Pool{New: func() any { return &decoder{seed: maphash.MakeSeed()} }}

type decoder struct {
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
	made    *Maps // where the maps made are listed, or nil
	// unread: the top level's members that are objects, but metadata, are kept as
	// their JSON (Raw: the data's own bytes), not decoded; the one named without, when
	// not empty, is checked and left out.
	unread  bool
	without string
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
func Object(data []byte) (map[string]any, error) { return decode(data, nil, false, "") }

// decode decodes data, which must hold one JSON object, and lists the maps it makes in
// made, when not nil; unread and without as the decoder's fields say.
func decode(data []byte, made *Maps, unread bool, without string) (map[string]any, error) {
	d := decoders.Get().(*decoder)
	d.made, d.unread, d.without = made, unread, without
	defer func() {
		clear(d.members) // what a decode that failed left
		d.members, d.made, d.unread, d.without = d.members[:0], nil, false, ""
		decoders.Put(d)
	}()
	i := space(data, 0)
	if byteAt(data, i) != '{' {
		if _, err := skip(data, i); err != nil {
			return nil, err
		}
		return nil, errors.New("jsontree: not a JSON object")
	}
	v, i, err := d.value(data, i, 0)
	if err != nil {
		return nil, err
	}
	if i = space(data, i); i != len(data) {
		return nil, syntaxError(i, "data after the JSON object: %s", found(data, i))
	}
	return v.(map[string]any), nil
}

// value decodes the JSON value at data[i], within depth containers, and returns it
// with the offset just past it. It checks what it reads as skip does.
func (d *decoder) value(data []byte, i, depth int) (v any, end int, err error) {
	switch c := byteAt(data, i); {
	case c == '{':
		if depth == maxDepth {
			return nil, 0, syntaxError(i, "nested deeper than %d", maxDepth)
		}
		// The members are gathered first, and the map made at their number: a map
		// that grows past eight entries has made, filled and dropped a smaller one.
		base := len(d.members)
		var closed bool
		for i, closed = opened(data, i, '}'); !closed; {
			nameEnd, at, err := nameColon(data, i)
			if err != nil {
				return nil, 0, err
			}
			name, _ := d.str(data[i:nameEnd], false)
			if depth == 0 && d.unread && name != "metadata" && byteAt(data, at) == '{' {
				if name == d.without {
					if i, err = skip(data, at); err != nil {
						return nil, 0, err
					}
					if i, closed, err = after(data, i, '}', "an object"); err != nil {
						return nil, 0, err
					}
					continue
				}
				if v, i, err = raw(data, at); err != nil {
					return nil, 0, err
				}
			} else if v, i, err = d.value(data, at, depth+1); err != nil {
				return nil, 0, err
			}
			d.members = append(d.members, member{name, v})
			if i, closed, err = after(data, i, '}', "an object"); err != nil {
				return nil, 0, err
			}
		}
		m, size := newMap(len(d.members) - base)
		if d.made != nil {
			d.made.list(m, size)
		}
		for _, e := range d.members[base:] {
			m[e.name] = e.v // of duplicate names, the last
		}
		clear(d.members[base:]) // the values are the tree's, not the decoder's
		d.members = d.members[:base]
		return m, i, nil
	case c == '[':
		if depth == maxDepth {
			return nil, 0, syntaxError(i, "nested deeper than %d", maxDepth)
		}
		s := []any{}
		var closed bool
		for i, closed = opened(data, i, ']'); !closed; {
			if v, i, err = d.value(data, i, depth+1); err != nil {
				return nil, 0, err
			}
			s = append(s, v)
			if i, closed, err = after(data, i, ']', "an array"); err != nil {
				return nil, 0, err
			}
		}
		return s, i, nil
	case c == '"':
		if end, err = skipString(data, i); err != nil {
			return nil, 0, err
		}
		_, v := d.str(data[i:end], true)
		return v, end, nil
	case c == '-' || '0' <= c && c <= '9':
		if end, err = number(data, i); err != nil {
			return nil, 0, err
		}
		raw := data[i:end]
		if n, ok := smallInt(raw); ok {
			return n, end, nil
		}
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return n, end, nil
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return nil, 0, fmt.Errorf("jsontree: number %s: %w", raw, err)
		}
		return f, end, nil
	case c == 't':
		end, err = literal(data, i, "true")
		return true, end, err
	case c == 'f':
		end, err = literal(data, i, "false")
		return false, end, err
	case c == 'n':
		end, err = literal(data, i, "null")
		return nil, end, err
	}
	return nil, 0, syntaxError(i, "expected a value, found %s", found(data, i))
}

// opened reads the start of the container opened at i, which closer closes: where its
// first member or element starts; or, when it is empty, closed and the offset past it.
func opened(data []byte, i int, closer byte) (int, bool) {
	if i = space(data, i+1); byteAt(data, i) == closer {
		return i + 1, true
	}
	return i, false
}

// after reads what follows a member or an element that ends at i, in a container that
// closer closes: a comma, and the offset of the next one; or closer, closed, and the
// offset past it.
func after(data []byte, i int, closer byte, in string) (int, bool, error) {
	switch i = space(data, i); byteAt(data, i) {
	case ',':
		return space(data, i+1), false, nil
	case closer:
		return i + 1, true, nil
	}
	return 0, false, syntaxError(i, "expected ',' or %q in %s, found %s", closer, in, found(data, i))
}

// Raw is a JSON value kept as its bytes, not decoded (ObjectMapsUnread). The package's
// encoder writes it as it is; encoding/json and json/v2 through MarshalJSON, which they
// check and compact.
type Raw []byte

// MarshalJSON returns r.
func (r Raw) MarshalJSON() ([]byte, error) { return r, nil }

// raw returns the object at data[i:], checked as skip checks it, as a Raw of data's
// own bytes, with no room past its end: an append to it cannot write over what follows.
func raw(data []byte, i int) (Raw, int, error) {
	end, err := skip(data, i)
	if err != nil {
		return nil, 0, err
	}
	return Raw(data[i:end:end]), end, nil
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
