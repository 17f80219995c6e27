package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/restoregraph/restoregraph/internal/readahead"
	"github.com/restoregraph/restoregraph/manifest"
)

// entries reads a tarball entry by entry, enforcing the limits.
type entries struct {
	opts   Options
	ahead  *readahead.Reader // inflating on its own goroutine; nil for a plain tarball
	tr     *tar.Reader
	closer io.Closer // the file, when ReadFile opened it

	total, count int64
	buf, prev    []byte // this entry's bytes and the previous one's, swapped
	// The last body stored, for the second copy of an object (Velero writes the
	// preferred version twice, one after the other): the same bytes are kept once.
	// prevKept says the previous entry's bytes are that body's; kept, this entry's.
	prevObj        objKey
	prevRef        bodyRef
	prevItem       *manifest.Item
	prevKept, kept bool
}

func newEntries(r io.Reader, opts Options) (*entries, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	e := &entries{opts: opts}
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &EntryError{Path: "(gzip header)", Err: err}
		}
		// Inflate on a second goroutine so that decompression and parsing overlap.
		e.ahead = readahead.New(zr, 256<<10, 8)
		src = e.ahead
	}
	e.tr = tar.NewReader(src)
	return e, nil
}

func (e *entries) close() {
	if e.ahead != nil {
		e.ahead.Close()
	}
	if e.closer != nil {
		e.closer.Close()
	}
}

// next returns the next regular file's cleaned name and bytes (valid until the call
// after the next), or io.EOF.
func (e *entries) next() (hdr *tar.Header, name string, data []byte, err error) {
	for {
		hdr, err = e.tr.Next()
		if err == io.EOF {
			return nil, "", nil, io.EOF
		}
		if err != nil {
			return nil, "", nil, &EntryError{Path: "(tar stream)", Err: err}
		}
		name, err = entryName(hdr)
		if err != nil {
			return nil, "", nil, &EntryError{Path: hdr.Name, Err: err}
		}
		if e.count++; e.count > e.opts.MaxEntries {
			return nil, "", nil, &LimitError{Path: hdr.Name, Limit: "entries", Max: e.opts.MaxEntries}
		}
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		if hdr.Size > e.opts.MaxEntryBytes {
			return nil, "", nil, &LimitError{Path: hdr.Name, Limit: "entry size", Max: e.opts.MaxEntryBytes}
		}
		if e.total += hdr.Size; e.total > e.opts.MaxTotalBytes {
			return nil, "", nil, &LimitError{Path: hdr.Name, Limit: "total size", Max: e.opts.MaxTotalBytes}
		}
		e.buf, e.prev = e.prev, e.buf
		e.prevKept, e.kept = e.kept, false
		if int64(cap(e.buf)) < hdr.Size {
			e.buf = make([]byte, hdr.Size, max(hdr.Size, 64<<10))
		}
		e.buf = e.buf[:hdr.Size]
		if _, err := io.ReadFull(e.tr, e.buf); err != nil {
			return nil, "", nil, &EntryError{Path: hdr.Name, Err: err}
		}
		return hdr, name, e.buf, nil
	}
}

// same reports whether data is the previous entry's body again, for the same object,
// and the previous entry is the body last stored.
func (e *entries) same(k objKey, data []byte) bool {
	return e.prevKept && e.prevObj == k && bytes.Equal(e.prev, data)
}

// stored records that this entry's bytes are the body at ref.
func (e *entries) stored(k objKey, ref bodyRef, it *manifest.Item) {
	e.prevObj, e.prevRef, e.prevItem, e.kept = k, ref, it, true
}

// entryName validates a header and returns its cleaned name.
func entryName(hdr *tar.Header) (string, error) {
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir:
	default:
		return "", fmt.Errorf("%w: type %q is not a regular file or directory", ErrUnsafeEntry, hdr.Typeflag)
	}
	name := strings.TrimPrefix(hdr.Name, "./")
	if hdr.Typeflag == tar.TypeDir {
		name = strings.TrimSuffix(name, "/")
		if name == "" || name == "." {
			return ".", nil
		}
	}
	if !filepath.IsLocal(name) || path.Clean(name) != name || strings.ContainsAny(name, "\\\x00") {
		return "", fmt.Errorf("%w: path is absolute, leaves the archive root or is not clean", ErrUnsafeEntry)
	}
	return name, nil
}
