package jsontree

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// The scan reads JSON without decoding it: Members and Elements hand out the raw bytes
// of an object's members and an array's elements, and Unquote decodes a string. Each
// checks the bytes it passes over as Object's decoder would (duplicate names and
// invalid UTF-8 allowed, as util/json allows them), and ends there: a scan that reads
// a few fields of an object never builds the rest. Strings, most of an object's bytes,
// are scanned eight bytes at a time.

// SyntaxError is JSON that the scan refuses: what it expected, and at which byte.
type SyntaxError struct {
	Offset int64 // of the byte refused, from the start of the data scanned
	What   string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("jsontree: %s at byte %d", e.What, e.Offset)
}

// maxDepth is how deep the scan nests, as deep as jsontext does.
const maxDepth = 10000

func syntaxError(i int, what string, args ...any) error {
	return &SyntaxError{Offset: int64(i), What: fmt.Sprintf(what, args...)}
}

// found describes data[i] for an error: the byte, or the end of the data.
func found(data []byte, i int) string {
	if i >= len(data) {
		return "end of data"
	}
	return fmt.Sprintf("%q", data[i])
}

// space returns the offset of the first byte at or after i that is not JSON whitespace.
func space(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Members calls member with the name and the raw value of each member of the JSON
// object that data holds, whitespace around it allowed, in order. The name is decoded
// and valid until member returns; the value is a slice of data, checked. Members stops
// at member's first error and returns it; the data is checked to its end otherwise.
func Members(data []byte, member func(name, value []byte) error) error {
	return members(data, func(name []byte, _, valueAt, valueEnd int) error {
		return member(name, data[valueAt:valueEnd])
	})
}

// members is Members, with each member's offsets: of its name's opening quote, and of
// its value's start and end.
func members(data []byte, member func(name []byte, nameAt, valueAt, valueEnd int) error) error {
	i, err := object(data, 0, func(name []byte, nameAt, valueAt int) (int, error) {
		valueEnd, err := skip(data, valueAt)
		if err != nil {
			return 0, err
		}
		return valueEnd, member(name, nameAt, valueAt, valueEnd)
	})
	if err != nil {
		return err
	}
	return end(data, i)
}

// ObjectAt scans the JSON object that starts at data[i], whitespace before it allowed,
// and returns the offset just past it. It calls member with each member's name, decoded
// and valid until member returns, and the offset of its value; member reads the value
// and returns the offset just past it, having checked it: with SkipAt, with ObjectAt or
// ArrayAt for the values it reads the parts of. A reader of a few members (an object's
// metadata) so scans every byte once, where Members checks each value before handing it
// out and a value read with Members again is scanned twice.
func ObjectAt(data []byte, i int, member func(name []byte, valueAt int) (int, error)) (int, error) {
	return object(data, i, func(name []byte, _, valueAt int) (int, error) { return member(name, valueAt) })
}

// ArrayAt is ObjectAt for an array: element reads the element at the offset it is
// given, and returns the offset just past it.
func ArrayAt(data []byte, i int, element func(valueAt int) (int, error)) (int, error) {
	i, empty, err := opening(data, i, '[', ']', "an array")
	if empty || err != nil {
		return i, err
	}
	for {
		if i, err = element(i); err != nil {
			return 0, err
		}
		var done bool
		if i, done, err = after(data, i, ']', "an array"); done || err != nil {
			return i, err
		}
	}
}

// SkipAt returns the offset just past the JSON value at data[i], having checked it.
func SkipAt(data []byte, i int) (int, error) { return skip(data, i) }

// End checks that only whitespace follows a value that ends at i.
func End(data []byte, i int) error { return end(data, i) }

// object is ObjectAt, with the offset of each member's name's opening quote.
func object(data []byte, i int, member func(name []byte, nameAt, valueAt int) (int, error)) (int, error) {
	i, empty, err := opening(data, i, '{', '}', "an object")
	if empty || err != nil {
		return i, err
	}
	// A name with an escape or a byte beyond ASCII is decoded into scratch; most have
	// neither and are handed out as data's own bytes. (An array here would move to the
	// heap at every call: member may keep what it is given, for all the compiler knows.)
	var scratch []byte
	for {
		nameAt := i
		nameEnd, valueAt, err := nameColon(data, i)
		if err != nil {
			return 0, err
		}
		name, _ := Unquote(scratch[:0], data[nameAt:nameEnd])
		if len(name) > 0 && &name[0] != &data[nameAt+1] {
			scratch = name
		}
		if i, err = member(name, nameAt, valueAt); err != nil {
			return 0, err
		}
		var done bool
		if i, done, err = after(data, i, '}', "an object"); done || err != nil {
			return i, err
		}
	}
}

// Omit returns the JSON object that data holds without its members named in names
// (each of them, where a name comes more than once), checked as Members checks it, in
// a new slice: each member kept as data has it, whitespace between them left out. It
// returns data itself when no member has one of the names. When member is not nil, it
// is called with each member, as Members calls it, in the same pass.
func Omit(data []byte, names []string, member func(name, value []byte) error) ([]byte, error) {
	return OmitInto(data, names, member, nil)
}

// OmitInto is Omit, with the new slice made by alloc, which returns an empty slice with
// room for n bytes (Maps.Bytes); with alloc nil, by make.
func OmitInto(data []byte, names []string, member func(name, value []byte) error, alloc func(n int) []byte) ([]byte, error) {
	// The members kept, as the offsets of their name and of their value's end; most
	// objects have fewer than the array holds.
	var buf [32][2]int
	kept, omitted := buf[:0], false
	err := members(data, func(name []byte, nameAt, valueAt, valueEnd int) error {
		if member != nil {
			if err := member(name, data[valueAt:valueEnd]); err != nil {
				return err
			}
		}
		if slices.Contains(names, string(name)) {
			omitted = true
		} else {
			kept = append(kept, [2]int{nameAt, valueEnd})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !omitted {
		return data, nil
	}
	n := 2
	for _, m := range kept {
		n += m[1] - m[0] + 1
	}
	var out []byte
	if alloc != nil {
		out = alloc(n)
	} else {
		out = make([]byte, 0, n)
	}
	out = append(out, '{')
	for j, m := range kept {
		if j > 0 {
			out = append(out, ',')
		}
		// The name, its colon and its value as data has them: whitespace may lie
		// between, as JSON allows.
		out = append(out, data[m[0]:m[1]]...)
	}
	return append(out, '}'), nil
}

// Elements calls element with the raw bytes of each element of the JSON array that data
// holds, whitespace around it allowed, in order, as Members does with an object.
func Elements(data []byte, element func(value []byte) error) error {
	i, err := ArrayAt(data, 0, func(valueAt int) (int, error) {
		valueEnd, err := skip(data, valueAt)
		if err != nil {
			return 0, err
		}
		return valueEnd, element(data[valueAt:valueEnd])
	})
	if err != nil {
		return err
	}
	return end(data, i)
}

// opening reads the opening of the object or array (opener) that starts at data[i],
// whitespace before it allowed: the offset of its first member or element; or, when it
// is empty, empty and the offset just past it.
func opening(data []byte, i int, opener, closer byte, what string) (int, bool, error) {
	if i = space(data, i); byteAt(data, i) != opener {
		return 0, false, syntaxError(i, "expected %s, found %s", what, found(data, i))
	}
	i, empty := opened(data, i, closer)
	return i, empty, nil
}

// end checks that only whitespace follows a value that ends at i.
func end(data []byte, i int) error {
	if i = space(data, i); i < len(data) {
		return syntaxError(i, "expected the end after the value, found %s", found(data, i))
	}
	return nil
}

// Unquote returns the string that value, a JSON string as Members or Elements gave it,
// stands for, appended to dst; or value's own bytes within the quotes, when it holds
// neither an escape nor a byte beyond ASCII. Invalid UTF-8 becomes U+FFFD, as Object
// decodes it. It reports false when value is not a string.
func Unquote(dst, value []byte) ([]byte, bool) {
	if len(value) < 2 || value[0] != '"' {
		return nil, false
	}
	b := value[1 : len(value)-1]
	for _, c := range b {
		if c == '\\' || c >= utf8.RuneSelf {
			// The scan checked the string; what AppendUnquote can still report is the
			// invalid UTF-8 it replaced.
			dst, _ = jsontext.AppendUnquote(dst, value)
			return dst, true
		}
	}
	return b, true
}

// skip returns the offset just past the JSON value at data[i], having checked it.
func skip(data []byte, i int) (int, error) {
	// open holds the containers the value at i is within, innermost last.
	var buf [32]byte
	open := buf[:0]
	for {
		// A value starts at i.
		var err error
		switch c := byteAt(data, i); {
		case c == '{' || c == '[':
			if len(open) == maxDepth {
				return 0, syntaxError(i, "nested deeper than %d", maxDepth)
			}
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			if i = space(data, i+1); byteAt(data, i) == closer {
				i++
				break
			}
			open = append(open, closer)
			if c == '{' {
				if _, i, err = nameColon(data, i); err != nil {
					return 0, err
				}
			}
			continue
		case c == '"':
			i, err = skipString(data, i)
		case c == 't':
			i, err = literal(data, i, "true")
		case c == 'f':
			i, err = literal(data, i, "false")
		case c == 'n':
			i, err = literal(data, i, "null")
		case c == '-' || '0' <= c && c <= '9':
			i, err = number(data, i)
		default:
			return 0, syntaxError(i, "expected a value, found %s", found(data, i))
		}
		if err != nil {
			return 0, err
		}
		// A value ended at i: close the containers it ends, then go on to the next.
		for {
			if len(open) == 0 {
				return i, nil
			}
			i = space(data, i)
			closer := open[len(open)-1]
			if c := byteAt(data, i); c == closer {
				open, i = open[:len(open)-1], i+1
				continue
			} else if c != ',' {
				return 0, syntaxError(i, "expected ',' or %q, found %s", closer, found(data, i))
			}
			if i = space(data, i+1); closer == '}' {
				if _, i, err = nameColon(data, i); err != nil {
					return 0, err
				}
			}
			break
		}
	}
}

// byteAt is data[i], or 0 past the end (no JSON value starts with 0).
func byteAt(data []byte, i int) byte {
	if i < len(data) {
		return data[i]
	}
	return 0
}

// nameColon skips an object member's name and the colon after it: it returns where the
// name ends and where the value starts.
func nameColon(data []byte, i int) (nameEnd, value int, err error) {
	if byteAt(data, i) != '"' {
		return 0, 0, syntaxError(i, "expected a name, found %s", found(data, i))
	}
	if nameEnd, err = skipString(data, i); err != nil {
		return 0, 0, err
	}
	if i = space(data, nameEnd); byteAt(data, i) != ':' {
		return 0, 0, syntaxError(i, "expected ':' after a name, found %s", found(data, i))
	}
	return nameEnd, space(data, i+1), nil
}

func literal(data []byte, i int, lit string) (int, error) {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return 0, syntaxError(i, "expected %s", lit)
	}
	return i + len(lit), nil
}

// number skips a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func number(data []byte, i int) (int, error) {
	start := i
	if byteAt(data, i) == '-' {
		i++
	}
	switch c := byteAt(data, i); {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		i = digits(data, i)
	default:
		return 0, syntaxError(i, "expected a digit in a number, found %s", found(data, start))
	}
	if byteAt(data, i) == '.' {
		j := digits(data, i+1)
		if j == i+1 {
			return 0, syntaxError(j, "expected a digit after '.', found %s", found(data, j))
		}
		i = j
	}
	if c := byteAt(data, i); c == 'e' || c == 'E' {
		i++
		if c := byteAt(data, i); c == '+' || c == '-' {
			i++
		}
		j := digits(data, i)
		if j == i {
			return 0, syntaxError(j, "expected a digit in an exponent, found %s", found(data, j))
		}
		i = j
	}
	return i, nil
}

func digits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}

// Eight bytes at a time: which of them are a quote, a backslash or a control
// character, the bytes a string's scan stops at. Of the bytes marked, the first is
// one of them; the ones after it may not be (a borrow runs on).
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

func stops(x uint64) uint64 {
	q, b := x^(ones*'"'), x^(ones*'\\')
	return ((x-ones*0x20)&^x | (q-ones)&^q | (b-ones)&^b) & highs
}

// nextStop returns the offset of the first byte at or after i that a string's scan
// stops at, or len(data).
func nextStop(data []byte, i int) int {
	for ; len(data)-i >= 8; i += 8 {
		if m := stops(binary.LittleEndian.Uint64(data[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(data); i++ {
		if c := data[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

// skipString skips the JSON string at data[i], a quote: every escape is one JSON
// allows, and no control character is left unescaped. Its UTF-8 is not checked.
func skipString(data []byte, i int) (int, error) {
	start := i
	i++
	for {
		if i = nextStop(data, i); i >= len(data) {
			return 0, syntaxError(start, "string not ended")
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			switch byteAt(data, i+1) {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := i + 2; k < i+6; k++ {
					if !isHex(byteAt(data, k)) {
						return 0, syntaxError(k, "expected a hex digit in \\u escape, found %s", found(data, k))
					}
				}
				i += 6
			default:
				return 0, syntaxError(i+1, "invalid escape %s", found(data, i+1))
			}
		default:
			return 0, syntaxError(i, "control character %q in a string", c)
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
