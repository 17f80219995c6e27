package memcluster

import (
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
)

// codec compresses the JSON of one resource's objects with s2 against a dictionary made
// of the resource's first objects. Objects of one resource share most of their bytes
// (field names, a namespace, an image, a label): each body of the 100k application
// backup, compressed alone against such a dictionary, keeps about a tenth of its size,
// and seven tenths without one (bench.BenchmarkBodyCompression); the store's JSON, with
// the UIDs it gives, about a quarter. Each object stays its own block, read without the
// others. A resource whose blocks go to a data file on a disk keeps them as they are:
// compressing them took a twentieth of the CPU of the million's embedded restore, to
// spare the page cache, which the kernel takes back once the file is written. A data
// file on tmpfs, whose pages are memory, keeps them compressed.
type codec struct {
	compressed atomic.Pointer[storage] // nil until the sample is whole
	plain      *storage                // how a block not compressed is kept: nil, in memory
	file       *dataFile               // where blocks are kept, or nil (useFile)
	onDisk     bool                    // file is on a disk: no block is compressed

	mu     sync.Mutex
	sample []byte // the first objects' JSON, until there is dictBytes of it
	done   bool   // the dictionary is made, or could not be
}

// dictBytes is how much of a resource's first objects its dictionary is made of: s2's
// largest dictionary.
const dictBytes = s2.MaxDictSize

// compressMax is the JSON of the largest object compressed: s2's dictionary encoder
// assumes blocks of at most 4 MiB, and etcd keeps objects of at most 1.5 MiB. A larger
// one, which only an in-process create can store, is kept as it is.
const compressMax = 1 << 20

// scratch holds buffers that an object is encoded into, and compressed into, before
// what is kept is copied out to a string of its own size (stored.identify).
var scratch = sync.Pool{New: func() any { return new([]byte) }}

// useFile keeps the blocks of the resource's objects in f, from its first object on,
// compressed only when f's pages are memory.
func (c *codec) useFile(f *dataFile) {
	c.file, c.plain, c.onDisk = f, &storage{file: f}, !f.inRAM
}

// compress returns raw compressed, in dst's buffer, grown as it needs, and the storage
// that says how to decompress it and where to keep it; or raw as it is, and where to
// keep that. The caller copies what is returned before it uses either buffer again.
func (c *codec) compress(dst *[]byte, raw []byte) ([]byte, *storage) {
	if len(raw) > compressMax || c.onDisk {
		return raw, c.plain
	}
	if in := c.compressed.Load(); in != nil {
		return encode(dst, in.dict, raw), in
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if in := c.compressed.Load(); in != nil {
		return encode(dst, in.dict, raw), in
	}
	if !c.done {
		c.sample = append(c.sample, raw...)
		if len(c.sample) >= dictBytes {
			// The sample's last bytes, where an object starts as every one does.
			if d := s2.MakeDict(c.sample, []byte(`{"apiVersion":`)); d != nil {
				in := &storage{dict: d}
				if c.file != nil {
					in = &storage{dict: d, file: c.file, inMemory: in}
				}
				c.compressed.Store(in)
			}
			c.sample, c.done = nil, true
		}
	}
	return raw, c.plain
}

// encode compresses raw against d, into dst's buffer.
func encode(dst *[]byte, d *s2.Dict, raw []byte) []byte {
	if n := s2.MaxEncodedLen(len(raw)); cap(*dst) < n {
		*dst = make([]byte, n)
	}
	*dst = d.Encode((*dst)[:cap(*dst)], raw)
	return *dst
}
