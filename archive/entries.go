package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/restoregraph/restoregraph/internal/readahead"
	"github.com/restoregraph/restoregraph/internal/strslab"
	"github.com/restoregraph/restoregraph/manifest"
)

// stream is what entries reads a tarball through: the read-ahead of an inflated one,
// whose Peek returns its blocks' bytes in place, or a bufio.Reader of a plain one.
type stream interface {
	io.Reader
	Peek(n int) ([]byte, error)
	Discard(n int) (int, error)
}

// entries reads a tarball entry by entry, enforcing the limits.
type entries struct {
	opts   Options
	ahead  *readahead.Reader // inflating on its own goroutine; nil for a plain tarball
	r      stream            // the tar stream, at a header or at the padding after a body
	pad    int               // the last body, when peeked, and the padding after it, not yet skipped
	closer io.Closer         // the file, when ReadFile opened it

	// names holds the entries' names, 64 KiB at a time: two million names of a
	// million objects' backup are then some thousand allocations, not two million.
	// A slab lives as long as a name in it: until the entries it read are indexed.
	names        *strslab.Strings
	total, count int64
	buf          []byte // the last entry's bytes, when too long to peek
	prev         []byte // the previous entry's bytes, for dup
	prevItem     bool   // the previous entry was an object's: prev holds its bytes
	last         lastBody
}

// peekMax is the longest entry next returns as the stream's bytes, not read into a
// buffer: an object's body is a few KiB; a carried manifest, or a large Secret, is read.
// A plain tarball's bufio.Reader holds as much.
const peekMax = 64 << 10

func newEntries(r io.Reader, opts Options) (*entries, error) {
	br := bufio.NewReaderSize(r, peekMax)
	e := &entries{opts: opts, r: br, names: strslab.New(0)}
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &EntryError{Path: "(gzip header)", Err: err}
		}
		// Inflate on a second goroutine so that decompression and parsing overlap. The
		// headers and bodies are read where the inflated blocks hold them.
		e.ahead = readahead.New(zr, 256<<10, 8)
		e.r = e.ahead
	}
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

// next returns the next regular file's cleaned name, its name as the tarball has it,
// and its bytes (valid until the next call), or io.EOF. The bytes of an entry of up to
// peekMax bytes are the stream's, not copied.
func (e *entries) next() (name, raw string, data []byte, err error) {
	for {
		// A stream that ends within the padding after the last body ends there, as
		// archive/tar reads it.
		if _, err := e.r.Discard(e.pad); err == io.EOF {
			return "", "", nil, io.EOF
		} else if err != nil {
			return "", "", nil, &EntryError{Path: "(tar stream)", Err: err}
		}
		e.pad = 0
		h, err := e.header()
		if err == io.EOF {
			return "", "", nil, io.EOF
		}
		if err != nil {
			return "", "", nil, &EntryError{Path: "(tar stream)", Err: err}
		}
		raw = h.name
		name, err = entryName(h.typeflag, h.name)
		if err != nil {
			return "", "", nil, &EntryError{Path: raw, Err: err}
		}
		if e.count++; e.count > e.opts.MaxEntries {
			return "", "", nil, &LimitError{Path: raw, Limit: LimitEntries, Max: e.opts.MaxEntries}
		}
		if h.typeflag == tar.TypeDir {
			continue // a directory has no data, whatever its header's size says
		}
		if limit, what := e.opts.entryLimit(name); h.size > limit {
			return "", "", nil, &LimitError{Path: raw, Limit: what, Max: limit}
		}
		if e.total += h.size; e.total > e.opts.MaxTotalBytes {
			return "", "", nil, &LimitError{Path: raw, Limit: LimitTotalSize, Max: e.opts.MaxTotalBytes}
		}
		pad := int(-h.size & (blockSize - 1))
		if h.size <= peekMax {
			if data, err = e.r.Peek(int(h.size)); err == nil {
				e.pad = int(h.size) + pad
				return name, raw, data, nil
			}
		} else {
			if int64(cap(e.buf)) < h.size {
				e.buf = make([]byte, h.size)
			}
			data = e.buf[:h.size]
			_, err = io.ReadFull(e.r, data)
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return "", "", nil, &EntryError{Path: raw, Err: err}
		}
		e.pad = pad
		return name, raw, data, nil
	}
}

const blockSize = 512

// header is what the walk reads of an entry's header.
type header struct {
	name     string
	typeflag byte
	size     int64
}

// header reads the next entry's header, leaving the stream at its data. A plain ustar
// header of a regular file or directory, which is what archive/tar's Writer writes
// for every entry of a Kubernetes backup, is parsed here; archive/tar reads every other
// header (PAX records, GNU long names, the end of the archive, damaged blocks), with
// its own errors. archive/tar takes 2 µs a header (it checks every byte of the block
// for non-ASCII runes to guess the format), more than inflating the entry.
func (e *entries) header() (header, error) {
	if blk, err := e.r.Peek(blockSize); err == nil {
		if h, ok := plainHeader(blk, e.names); ok {
			e.r.Discard(blockSize)
			return h, nil
		}
	}
	// A new tar.Reader reads exactly the header's blocks, and the records that extend
	// it, from the stream; the data is then next, of hdr.Size bytes, as it is not
	// sparse.
	hdr, err := tar.NewReader(e.r).Next()
	if err != nil {
		return header{}, err
	}
	// A sparse file's data is shorter than its size; none is part of a backup, and it
	// is refused as the GNU sparse type is.
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return header{name: hdr.Name, typeflag: tar.TypeGNUSparse}, nil
		}
	}
	return header{name: hdr.Name, typeflag: hdr.Typeflag, size: hdr.Size}, nil
}

// plainHeader parses blk when archive/tar would read it as a ustar header of a
// regular file or a directory, standing alone: the ustar magic and version, a
// checksum that matches, every numeric field octal. It reports false otherwise. The
// name is copied into names.
func plainHeader(blk []byte, names *strslab.Strings) (header, bool) {
	const (
		magic   = "ustar\x0000"
		trailer = "tar\x00" // marks star's variant, whose prefix field is shorter
	)
	if string(blk[257:265]) != magic || string(blk[508:512]) == trailer {
		return header{}, false
	}
	typeflag := blk[156]
	if typeflag != tar.TypeReg && typeflag != tar.TypeDir {
		return header{}, false
	}
	// The checksum is the sum of the block's bytes with its own field as spaces.
	if v, ok := octal(blk[148:156]); !ok || v != checksum(blk) {
		return header{}, false
	}
	// mode, uid, gid, mtime, devmajor and devminor are not read, but archive/tar
	// refuses a header where they are not numbers.
	for _, f := range [...][2]int{{100, 108}, {108, 116}, {116, 124}, {136, 148}, {329, 337}, {337, 345}} {
		if fld := blk[f[0]:f[1]]; !plainOctal(fld) {
			if _, ok := octal(fld); !ok {
				return header{}, false
			}
		}
	}
	size, ok := octal(blk[124:136])
	if !ok {
		return header{}, false
	}
	name := cString(blk[:100])
	if prefix := cString(blk[345:500]); len(prefix) > 0 {
		return header{name: string(prefix) + "/" + string(name), typeflag: typeflag, size: size}, true
	}
	return header{name: names.Copy(name), typeflag: typeflag, size: size}, true
}

// checksum is the sum of a header block's bytes, its checksum field (bytes 148 to 155)
// counted as spaces. It adds eight bytes at a time, in four 16-bit lanes that a block's
// 64 words cannot overflow.
func checksum(blk []byte) int64 {
	const evens = 0x00FF00FF00FF00FF
	var lanes uint64
	for i := 0; i < blockSize; i += 8 {
		x := binary.LittleEndian.Uint64(blk[i:])
		if i == 144 { // bytes 144-151: the field's first four are spaces
			x = x&0xFFFFFFFF | 0x20202020<<32
		} else if i == 152 { // bytes 152-159: its last four
			x = x&^0xFFFFFFFF | 0x20202020
		}
		lanes += x&evens + x>>8&evens
	}
	return int64(lanes&0xFFFF + lanes>>16&0xFFFF + lanes>>32&0xFFFF + lanes>>48)
}

// octal parses a numeric field as archive/tar does when the field is in octal:
// spaces and NULs around it ignored, up to the first NUL within. It reports false for
// anything else, base-256 included.
func octal(f []byte) (int64, bool) {
	for len(f) > 0 && (f[0] == ' ' || f[0] == 0) {
		f = f[1:]
	}
	for len(f) > 0 && (f[len(f)-1] == ' ' || f[len(f)-1] == 0) {
		f = f[:len(f)-1]
	}
	if i := bytes.IndexByte(f, 0); i >= 0 {
		f = f[:i]
	}
	var v int64
	for _, c := range f {
		if c < '0' || c > '7' {
			return 0, false
		}
		v = v<<3 | int64(c-'0')
	}
	return v, true
}

// plainOctal reports whether each byte of f is an octal digit or a NUL, as archive/tar's
// Writer fills a numeric field (digits, then a NUL): octal accepts every such field.
// It is judged eight bytes at a time; octal judges any other. (octal took a tenth of a
// microsecond a header for the six fields only checked.)
func plainOctal(f []byte) bool {
	const (
		ones  = 0x0101010101010101
		highs = ones * 0x80
		lows  = ones * 0x7f
	)
	// nonzero has the high bit of each byte of x that is not 0, and no other bit.
	nonzero := func(x uint64) uint64 { return ((x & lows) + lows | x) & highs }
	for len(f) > 0 {
		var x uint64
		if len(f) >= 8 {
			x, f = binary.LittleEndian.Uint64(f), f[8:]
		} else { // the last bytes, NULs after them
			var w [8]byte
			copy(w[:], f)
			x, f = binary.LittleEndian.Uint64(w[:]), nil
		}
		digits := ^nonzero(x&(ones*0xf8)^ones*'0') & highs
		if nuls := ^nonzero(x) & highs; digits|nuls != highs {
			return false
		}
	}
	return true
}

// cString is f up to its first NUL.
func cString(f []byte) []byte {
	if i := bytes.IndexByte(f, 0); i >= 0 {
		f = f[:i]
	}
	return f
}

// dup reports whether data, an entry's bytes, are the previous entry's, both being
// objects' entries (isItem). Every regular entry read after a carried manifest passes
// through it, in the order read; it keeps a copy of an object's bytes for the next.
// (The walk before a manifest compares each entry with its batch's copy instead:
// decoding.repeats.)
func (e *entries) dup(isItem bool, data []byte) bool {
	d := isItem && e.prevItem && bytes.Equal(e.prev, data)
	if e.prevItem = isItem; isItem {
		e.prev = append(e.prev[:0], data...)
	}
	return d
}

// lastBody is the body last stored, for the second copy of an object (Velero writes
// the preferred version twice, one after the other): the same bytes are kept once.
// kept says the object's entry met last has these bytes.
type lastBody struct {
	obj  objKey
	ref  bodyRef
	item *manifest.Item // the item its metadata made, for a backup without a manifest
	kept bool
	// Once the entry has been indexed (a backup without a manifest): the copy last
	// placed in the body index at the body's version is unversioned. A second copy with
	// the same bytes is placed from it without a lookup.
	placedUnversioned bool
}

// shared starts the turn of an object's entry: it reports whether the entry, for object
// k, whose bytes are the previous entry's when dup, has the body last stored. Until the
// caller says so, the entry does not have it.
func (l *lastBody) shared(dup bool, k objKey) bool {
	prev := l.kept
	l.kept = false
	return dup && prev && l.obj == k
}

// entryName validates an entry's type and name and returns its cleaned name.
func entryName(typeflag byte, raw string) (string, error) {
	switch typeflag {
	case tar.TypeReg, tar.TypeDir:
	default:
		return "", fmt.Errorf("%w: type %q is not a regular file or directory", ErrUnsafeEntry, typeflag)
	}
	name := strings.TrimPrefix(raw, "./")
	if typeflag == tar.TypeDir {
		name = strings.TrimSuffix(name, "/")
		if name == "" || name == "." {
			return ".", nil
		}
	}
	if !plainName(name) && !localClean(name) {
		return "", fmt.Errorf("%w: path is absolute, leaves the archive root or is not clean", ErrUnsafeEntry)
	}
	return name, nil
}

// localClean reports whether name stays within the archive root and is clean: not
// absolute, no element "..", path.Clean's own form, neither a backslash nor a NUL.
func localClean(name string) bool {
	return filepath.IsLocal(name) && path.Clean(name) == name && !strings.ContainsAny(name, "\\\x00")
}

// plainName is localClean's answer, in one pass, for a name of letters, digits, '-',
// '_', '.' and '/' (every name of a backup's entries): true when no element is empty,
// "." or "..". It reports false for any other name, which localClean then judges.
// (filepath.IsLocal and path.Clean took a quarter of a microsecond an entry.)
func plainName(name string) bool {
	start := 0 // where the current element starts
	for i := 0; i <= len(name); i++ {
		if i < len(name) {
			c := name[i]
			switch {
			case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
				continue
			case c != '/':
				return false
			}
		}
		// An element ends at i.
		if el := name[start:i]; el == "" || el == "." || el == ".." {
			return false
		}
		start = i + 1
	}
	return true
}
