package jsontree

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

var encoders = sync.Pool{New: func() any { return new(encoder) }}

type encoder struct {
	out   []byte
	depth int

	// For MarshalCut: what to leave out, the cuts made so far, and whether the value
	// being encoded is obj[spec.Outer] or the list under it.
	spec            *CutSpec
	cuts            []Cut
	inOuter, inList bool
}

// Marshal encodes obj as encoding/json encodes it: object names sorted, '<', '>', '&',
// U+2028 and U+2029 escaped, invalid UTF-8 as U+FFFD. It walks the tree itself, and
// appends the JSON itself, without reflection, where it holds what Object decodes (maps,
// slices, strings, int64, float64, bools and nulls); a value of any other type is
// encoded by json/v2 with encoding/json's options.
func Marshal(obj map[string]any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	e.out = e.out[:0]
	if err := e.object(obj); err != nil {
		return nil, err
	}
	return slices.Clone(e.out), nil
}

// CutSpec names the string values MarshalCut leaves out of an object: the members
// Names of the object obj[Outer], and the member Item of each object in the list
// obj[Outer][List].
type CutSpec struct {
	Outer      string
	Names      []string
	List, Item string
}

// A Cut is a string MarshalCut left out: its bytes, put at data[At:At] (between the
// quotes left in its place; data is all MarshalCut returns, dst's bytes included), make
// the JSON Marshal writes. Name is its index in the spec's Names, or -1 for an item of
// the list.
type Cut struct {
	At    int
	Name  int
	Value string
}

// MarshalCut appends to dst the encoding of obj, as Marshal encodes it, with the
// strings spec names left out where JSON writes them as they are (printable ASCII that
// needs no escape; any other is kept), and appends to cuts what it left out, in the
// order of the JSON. Keys are sorted, so the order is that of the names.
//
// A store keeps what it reads from an object's metadata beside its JSON anyway (its
// name, its UID, its owners' UIDs), and what only its lock gives (a resourceVersion):
// written once, not twice, and not compressed where they do not compress.
func MarshalCut(dst []byte, obj map[string]any, spec *CutSpec, cuts []Cut) (data []byte, _ []Cut, err error) {
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	start := len(dst)
	e.out, e.spec, e.cuts = dst, spec, cuts // appended to where they are: the pool keeps no hold of them after
	defer func() { e.out, e.spec, e.cuts, e.inOuter, e.inList = nil, nil, nil, false, false }()
	if err := e.object(obj); err != nil {
		return dst[:start], cuts, err
	}
	return e.out, e.cuts, nil
}

func (e *encoder) object(m map[string]any) error {
	if m == nil {
		e.out = append(e.out, "null"...)
		return nil
	}
	// The members are sorted in an array on the goroutine's stack, most objects having
	// few: written to the heap, each of their strings and values would be a write
	// barrier while the collector marks.
	var room [stackMembers]member
	members := room[:0]
	for k, v := range m {
		members = append(members, member{k, v})
	}
	sortMembers(members)
	e.depth++
	defer func() { e.depth-- }()
	e.out = append(e.out, '{')
	for i, mb := range members {
		if i > 0 {
			e.out = append(e.out, ',')
		}
		e.out = appendString(e.out, mb.name)
		e.out = append(e.out, ':')
		if e.spec != nil && e.depth <= 3 {
			if err := e.cutValue(mb.name, mb.v); err != nil {
				return err
			}
			continue
		}
		if err := e.value(mb.v); err != nil {
			return err
		}
	}
	e.out = append(e.out, '}')
	return nil
}

// stackMembers is how many members of an object the encoder sorts on its stack.
const stackMembers = 16

// sortMembers sorts ms by name: by insertion when they are few, as an object's members
// most often are.
func sortMembers(ms []member) {
	if len(ms) > 12 {
		slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.name, b.name) })
		return
	}
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && nameLess(ms[j].name, ms[j-1].name); j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
}

// nameLess is a < b, by their first bytes where those differ, as an object's names most
// often do, without a call to compare the strings.
func nameLess(a, b string) bool {
	if len(a) > 0 && len(b) > 0 && a[0] != b[0] {
		return a[0] < b[0]
	}
	return a < b
}

// cutValue encodes member k of the object at e.depth, v, or leaves it out (MarshalCut).
func (e *encoder) cutValue(k string, v any) error {
	spec := e.spec
	switch {
	case e.depth == 1 && k == spec.Outer:
		_, e.inOuter = v.(map[string]any)
		defer func() { e.inOuter = false }()
	case e.depth == 2 && e.inOuter && k == spec.List:
		if l, ok := v.([]any); ok && l != nil {
			return e.cutList(l)
		}
	case e.depth == 2 && e.inOuter:
		if i := slices.Index(spec.Names, k); i >= 0 && e.cut(i, v) {
			return nil
		}
	case e.depth == 3 && e.inList && k == spec.Item:
		if e.cut(-1, v) {
			return nil
		}
	}
	return e.value(v)
}

// cutList encodes l, the list spec.List names, whose objects' members are looked in
// (and not those of a list in it).
func (e *encoder) cutList(l []any) error {
	e.out = append(e.out, '[')
	for i, x := range l {
		if i > 0 {
			e.out = append(e.out, ',')
		}
		_, e.inList = x.(map[string]any)
		err := e.value(x)
		e.inList = false
		if err != nil {
			return err
		}
	}
	e.out = append(e.out, ']')
	return nil
}

// cut leaves out v, the value of spec.Names[name] (or of the list's item, -1), when it
// is a string JSON writes as it is, and says whether it did.
func (e *encoder) cut(name int, v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || !plain[c] {
			return false
		}
	}
	e.out = append(e.out, '"')
	e.cuts = append(e.cuts, Cut{At: len(e.out), Name: name, Value: s})
	e.out = append(e.out, '"')
	return true
}

// errUnsupported is what a NaN or an infinity is, as encoding/json refuses them.
var errUnsupported = errors.New("jsontree: unsupported value: NaN or infinity")

func (e *encoder) value(v any) error {
	switch v := v.(type) {
	case map[string]any:
		return e.object(v)
	case Raw:
		e.out = append(e.out, v...)
		return nil
	case []any:
		if v == nil {
			e.out = append(e.out, "null"...)
			return nil
		}
		e.out = append(e.out, '[')
		for i, x := range v {
			if i > 0 {
				e.out = append(e.out, ',')
			}
			if err := e.value(x); err != nil {
				return err
			}
		}
		e.out = append(e.out, ']')
		return nil
	case string:
		e.out = appendString(e.out, v)
		return nil
	case int64:
		e.out = strconv.AppendInt(e.out, v, 10)
		return nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errUnsupported
		}
		e.out = appendFloat(e.out, v)
		return nil
	case bool:
		e.out = strconv.AppendBool(e.out, v)
		return nil
	case nil:
		e.out = append(e.out, "null"...)
		return nil
	}
	data, err := jsonv2.Marshal(v, jsonv1.DefaultOptionsV1())
	if err != nil {
		return err
	}
	e.out = append(e.out, data...)
	return nil
}

// appendFloat appends f as encoding/json writes a float64: the shortest decimal that
// reads back as f, in exponent form below 1e-6 and from 1e21, with an exponent of at
// least two digits only where it needs them.
func appendFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// plain marks the ASCII bytes a JSON string holds as they are under encoding/json's
// escaping: printable, and neither a quote, a backslash, nor '<', '>' or '&'.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendString appends s quoted as encoding/json quotes it, but for invalid UTF-8,
// which it writes as U+FFFD itself, as json/v2 does, where encoding/json writes it
// escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // other control characters, '<', '>' and '&'
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = utf8.AppendRune(dst, utf8.RuneError)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
