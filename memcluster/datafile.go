package memcluster

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
)

// storage is how a record's block, its cut table then its JSON, is kept: compressed
// against dict or not, and in the server's data file or in the record's own data. The
// records of a resource share one for each way (codec); nil is in data, as it is.
type storage struct {
	dict *s2.Dict  // nil: not compressed
	file *dataFile // nil: in the record's data
	// inMemory is the same storage without the file, for a block the file could not
	// take.
	inMemory *storage
}

// inFile reports whether blocks kept this way are in a data file; nil keeps them in
// memory.
func (in *storage) inFile() bool { return in != nil && in.file != nil }

// dataFile keeps records' blocks in a file of their own (Options.DataDir), removed
// from its directory once made: the objects' JSON then lies in the kernel's page
// cache, which it may reclaim, not in the Go heap, which the collector keeps twice the
// size of what is live. It only grows: the block of a record replaced or deleted is not
// reused, for a store that a restore fills and reads. Blocks are written flushBytes at
// a time, not a system call each; those not yet written are read from memory.
type dataFile struct {
	f       *os.File
	path    string       // removed by close, where the system refused to remove an open file
	written atomic.Int64 // the bytes in the file, which a read takes from it without the lock
	flush   int          // how much the blocks not yet written grow to before they are
	// inRAM: the file system keeps the file's pages in memory, with no disk behind them
	// (tmpfs, ramfs), and the resources' blocks are compressed (codec.useFile).
	inRAM bool

	mu      sync.Mutex
	pending []byte // the blocks after written
	failure error  // the first write that failed: pending stays in memory, and later blocks in their records
}

// flushBytes is a data file's flush unless the options say otherwise: a system call for
// a thousand objects or so, not for each.
const flushBytes = 256 << 10

// openDataFile makes a data file in dir that writes flush bytes at a time (flushBytes
// when 0).
func openDataFile(dir string, flush int) (*dataFile, error) {
	f, err := os.CreateTemp(dir, "memcluster-*.data")
	if err != nil {
		return nil, fmt.Errorf("memcluster: data file: %w", err)
	}
	if flush <= 0 {
		flush = flushBytes
	}
	d := &dataFile{f: f, flush: flush, inRAM: inMemoryFS(f)}
	if os.Remove(f.Name()) != nil {
		d.path = f.Name()
	}
	return d, nil
}

// put adds block and returns where it lies, or false when the file refused a write (a
// full disk): the caller keeps it in memory, as the file keeps what it had not written
// then, and nothing is lost.
func (d *dataFile) put(block []byte) (int64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failure != nil {
		return 0, false
	}
	off := d.written.Load() + int64(len(d.pending))
	d.pending = append(d.pending, block...)
	if len(d.pending) >= d.flush {
		if _, err := d.f.WriteAt(d.pending, d.written.Load()); err != nil {
			d.failure = err
		} else {
			d.written.Add(int64(len(d.pending)))
			d.pending = d.pending[:0]
		}
	}
	return off, true
}

// size returns the bytes the file holds, written or not.
func (d *dataFile) size() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.written.Load() + int64(len(d.pending))
}

// err returns the first write the file refused, or nil.
func (d *dataFile) err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.failure
}

// get reads the n bytes at off into buf's buffer, grown as it needs, and returns them.
// A block the file took and cannot give back is a store that has lost an object: it
// panics, as a block that does not decompress does.
func (d *dataFile) get(buf *[]byte, off int64, n int) []byte {
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	if off+int64(n) > d.written.Load() {
		d.mu.Lock()
		if w := d.written.Load(); off >= w {
			copy(b, d.pending[off-w:])
			d.mu.Unlock()
			return b
		}
		d.mu.Unlock() // written since: a block is written whole, with those before it
	}
	if _, err := d.f.ReadAt(b, off); err != nil {
		panic(fmt.Sprintf("memcluster: the data file does not give back %d bytes at %d: %v", n, off, err))
	}
	return b
}

// close closes the file, and removes it where openDataFile could not.
func (d *dataFile) close() error {
	err := d.f.Close()
	if d.path != "" {
		err = errors.Join(err, os.Remove(d.path))
	}
	return err
}
