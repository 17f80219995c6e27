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
// others.
type codec struct {
	dict atomic.Pointer[s2.Dict] // nil until the sample is whole

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

// compress returns raw compressed, in dst's buffer, grown as it needs, and the
// dictionary to decompress it with; or raw as it is and nil. The caller copies what is
// returned before it uses either buffer again.
func (c *codec) compress(dst *[]byte, raw []byte) ([]byte, *s2.Dict) {
	if len(raw) > compressMax {
		return raw, nil
	}
	if d := c.dict.Load(); d != nil {
		return encode(dst, d, raw), d
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.dict.Load(); d != nil {
		return encode(dst, d, raw), d
	}
	if !c.done {
		c.sample = append(c.sample, raw...)
		if len(c.sample) >= dictBytes {
			// The sample's last bytes, where an object starts as every one does.
			if d := s2.MakeDict(c.sample, []byte(`{"apiVersion":`)); d != nil {
				c.dict.Store(d)
			}
			c.sample, c.done = nil, true
		}
	}
	return raw, nil
}

// encode compresses raw against d, into dst's buffer.
func encode(dst *[]byte, d *s2.Dict, raw []byte) []byte {
	if n := s2.MaxEncodedLen(len(raw)); cap(*dst) < n {
		*dst = make([]byte, n)
	}
	*dst = d.Encode((*dst)[:cap(*dst)], raw)
	return *dst
}
