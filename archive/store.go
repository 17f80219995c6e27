package archive

import (
	"fmt"
	"os"
)

// bodyRef is where the store keeps one body.
type bodyRef struct {
	off int64
	n   int32
	// unversioned: read from the 1.0 path, which a versioned copy of the same version
	// replaces.
	unversioned bool
}

// bodyStore keeps object bodies one after another: in memory up to a budget, then in
// one spill file whose offsets the references name. Bodies are only appended; a body
// once returned is never overwritten, so callers may keep the slices they are given.
type bodyStore struct {
	dir     string // where the spill file is made
	budget  int
	file    *os.File // nil until the budget is exceeded
	fileLen int64
	mem     []byte // the bodies after fileLen
}

func (s *bodyStore) add(data []byte) (bodyRef, error) {
	if len(s.mem)+len(data) > s.budget && len(s.mem) > 0 {
		if err := s.flush(); err != nil {
			return bodyRef{}, err
		}
	}
	ref := bodyRef{off: s.fileLen + int64(len(s.mem)), n: int32(len(data))}
	s.mem = append(s.mem, data...)
	return ref, nil
}

// flush moves the bodies in memory to the spill file, and starts a new buffer: slices
// of the old one may still be held by callers.
func (s *bodyStore) flush() error {
	if s.file == nil {
		f, err := os.CreateTemp(s.dir, "restoregraph-bodies-*")
		if err != nil {
			return fmt.Errorf("archive: spill file: %w", err)
		}
		s.file = f
	}
	if _, err := s.file.Write(s.mem); err != nil {
		return fmt.Errorf("archive: spill file: %w", err)
	}
	s.fileLen += int64(len(s.mem))
	s.mem = make([]byte, 0, min(s.budget, 4<<20))
	return nil
}

func (s *bodyStore) get(ref bodyRef) ([]byte, error) {
	if ref.off >= s.fileLen {
		start := ref.off - s.fileLen
		return s.mem[start : start+int64(ref.n) : start+int64(ref.n)], nil
	}
	buf := make([]byte, ref.n)
	if _, err := s.file.ReadAt(buf, ref.off); err != nil {
		return nil, fmt.Errorf("archive: spill file: %w", err)
	}
	return buf, nil
}

// close removes the spill file.
func (s *bodyStore) close() error {
	if s.file == nil {
		return nil
	}
	err := s.file.Close()
	if rerr := os.Remove(s.file.Name()); err == nil {
		err = rerr
	}
	s.file = nil
	return err
}
