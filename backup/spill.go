package backup

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/restoregraph/restoregraph/archive"
)

// spill holds bodies on disk while the backup lists, so that memory does not grow with
// what is backed up: the backup keeps only where each body is. A record is its entry's
// length and its body's (two big-endian uint32), the entry as JSON, then the body.
type spill struct {
	f   *os.File
	w   *bufio.Writer
	off int64 // where the next record goes
}

const spillHeader = 8

func newSpill(dir string) (*spill, error) {
	f, err := os.CreateTemp(dir, "restoregraph-backup-*")
	if err != nil {
		return nil, err
	}
	return &spill{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// put appends a record and returns where it starts.
func (s *spill) put(e archive.Entry, body []byte) (int64, error) {
	head, err := json.Marshal(e)
	if err != nil {
		return 0, err
	}
	var hdr [spillHeader]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(head)))
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(body)))
	for _, p := range [][]byte{hdr[:], head, body} {
		if _, err := s.w.Write(p); err != nil {
			return 0, fmt.Errorf("backup: spill file: %w", err)
		}
	}
	at := s.off
	s.off += int64(spillHeader + len(head) + len(body))
	return at, nil
}

// done makes every record put so far readable.
func (s *spill) done() error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("backup: spill file: %w", err)
	}
	return nil
}

// at reads the record that starts at off, into *buf (grown as needed), and says where
// the next one starts.
func (s *spill) at(off int64, buf *[]byte) (e archive.Entry, body []byte, next int64, err error) {
	var hdr [spillHeader]byte
	if _, err := s.f.ReadAt(hdr[:], off); err != nil {
		return e, nil, 0, fmt.Errorf("backup: spill file: %w", err)
	}
	headLen := int(binary.BigEndian.Uint32(hdr[:4]))
	n := headLen + int(binary.BigEndian.Uint32(hdr[4:]))
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	rec := (*buf)[:n]
	if _, err := s.f.ReadAt(rec, off+spillHeader); err != nil {
		return e, nil, 0, fmt.Errorf("backup: spill file: %w", err)
	}
	if err := json.Unmarshal(rec[:headLen], &e); err != nil {
		return e, nil, 0, fmt.Errorf("backup: spill file: %w", err)
	}
	return e, rec[headLen:], off + spillHeader + int64(n), nil
}

// each hands every record to fn, in the order they were put. The body is fn's only
// until it returns.
func (s *spill) each(fn func(archive.Entry, []byte) error) error {
	var buf []byte
	for off := int64(0); off < s.off; {
		e, body, next, err := s.at(off, &buf)
		if err != nil {
			return err
		}
		if err := fn(e, body); err != nil {
			return err
		}
		off = next
	}
	return nil
}

// close removes the file.
func (s *spill) close() error {
	return errors.Join(s.f.Close(), os.Remove(s.f.Name()))
}
