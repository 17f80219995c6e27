// Package strslab keeps many small strings in few allocations: decoders of backups
// with a million objects copy their strings into append-only slabs, and share the
// ones that repeat, so that the garbage collector sees thousands of objects, not
// tens of millions.
package strslab

import "unsafe"

// Strings copies strings out of the buffers they were read from. The zero value is
// not ready; use New.
type Strings struct {
	slab     []byte
	interned map[string]string
	limit    int
}

// New returns a Strings that shares up to limit distinct repeated strings.
func New(limit int) *Strings { return &Strings{interned: map[string]string{}, limit: limit} }

// Intern returns one shared copy of b: for strings that repeat (kinds, groups,
// namespaces, label keys).
func (s *Strings) Intern(b []byte) string {
	if v, ok := s.interned[string(b)]; ok { // no allocation for the lookup
		return v
	}
	v := s.Copy(b)
	if len(s.interned) < s.limit {
		s.interned[v] = v
	}
	return v
}

// Copy copies b into the current slab and returns a string over the copy. The slab is
// append-only: bytes once written are never changed, so strings over them stay
// immutable as Go requires.
func (s *Strings) Copy(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > 1024 {
		return string(b)
	}
	if len(s.slab)+len(b) > cap(s.slab) {
		s.slab = make([]byte, 0, 64<<10)
	}
	start := len(s.slab)
	s.slab = append(s.slab, b...)
	return unsafe.String(&s.slab[start], len(b))
}
