package archive

import (
	"fmt"
	"os"
	"slices"
)

// bodyRef is where the store keeps one body.
type bodyRef struct {
	off int64
	n   int32
	// unversioned: read from the 1.0 path, which a versioned copy of the same version
	// replaces.
	unversioned bool
}

// bodyStore keeps object bodies one after another: in memory up to a budget, in
// chunks, then in one spill file whose offsets the references name. Bodies are only
// appended; a body once returned is never overwritten, so callers may keep the slices
// they are given.
type bodyStore struct {
	dir     string // where the spill file is made
	budget  int
	file    *os.File // nil until the budget is exceeded
	fileLen int64
	chunks  [][]byte // the bodies after fileLen; a body never straddles two
	starts  []int64  // the offset of each chunk's first byte
	memLen  int
	// reuse lets flush keep the chunks for the next bodies: true while Read reads, as
	// nobody holds a body yet.
	reuse bool
	spare [][]byte
}

const chunkSize = 4 << 20

func (s *bodyStore) add(data []byte) (bodyRef, error) {
	if s.memLen+len(data) > s.budget && s.memLen > 0 {
		if err := s.flush(); err != nil {
			return bodyRef{}, err
		}
	}
	last := len(s.chunks) - 1
	if last < 0 || cap(s.chunks[last])-len(s.chunks[last]) < len(data) {
		var c []byte
		if n := len(s.spare); n > 0 && cap(s.spare[n-1]) >= len(data) {
			c, s.spare = s.spare[n-1][:0], s.spare[:n-1]
		} else {
			c = make([]byte, 0, max(chunkSize, len(data)))
		}
		s.chunks = append(s.chunks, c)
		s.starts = append(s.starts, s.fileLen+int64(s.memLen))
		last++
	}
	c := s.chunks[last]
	ref := bodyRef{off: s.starts[last] + int64(len(c)), n: int32(len(data))}
	s.chunks[last] = append(c, data...)
	s.memLen += len(data)
	return ref, nil
}

// flush moves the bodies in memory to the spill file. The chunks are let go unless
// reuse says nobody can hold a slice of them.
func (s *bodyStore) flush() error {
	if s.file == nil {
		f, err := os.CreateTemp(s.dir, "restoregraph-bodies-*")
		if err != nil {
			return fmt.Errorf("archive: spill file: %w", err)
		}
		s.file = f
	}
	for _, c := range s.chunks {
		if _, err := s.file.Write(c); err != nil {
			return fmt.Errorf("archive: spill file: %w", err)
		}
	}
	s.fileLen += int64(s.memLen)
	if s.reuse {
		s.spare = append(s.spare, s.chunks...)
	}
	s.chunks, s.starts, s.memLen = nil, nil, 0
	return nil
}

// settle is called once every body is added: when some went to the spill file, the
// rest follow, and their memory is let go. The last bodies are then read from the file
// (that is, from the page cache) as the first are, and a backup of a million objects
// does not keep the budget's worth of them in its heap for the whole restore.
func (s *bodyStore) settle() error {
	if s.file == nil || s.memLen == 0 {
		return nil
	}
	return s.flush()
}

func (s *bodyStore) get(ref bodyRef) ([]byte, error) {
	if ref.off >= s.fileLen {
		i, _ := slices.BinarySearch(s.starts, ref.off+1)
		c, start := s.chunks[i-1], ref.off-s.starts[i-1]
		return c[start : start+int64(ref.n) : start+int64(ref.n)], nil
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
