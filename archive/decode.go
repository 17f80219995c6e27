package archive

import (
	"github.com/restoregraph/restoregraph/internal/strslab"
)

// A backup without a manifest is read in three stages, so that decoding the bodies'
// metadata, the costliest part of the read after the inflate, runs beside the walk of
// the tarball: the walk copies resource entries into batches; a decoder, on a
// goroutine of its own, reads each batch's metadata; the index takes the batches back
// in the order they were read and places each body (readItem). Errors are met in the
// tarball's order, as in a read with one goroutine.

// pending is an entry read by the walk, waiting to be indexed.
type pending struct {
	raw     string   // its name in the tarball
	loc     location // where its path puts it, unless err
	err     error    // why its path is not an object's
	start   int      // its bytes are the batch's data[start:end]
	end     int
	dup     bool // its bytes are the previous entry's, which was a resource entry too
	meta    objectMeta
	metaErr error
}

type batch struct {
	data    []byte
	entries []pending
}

func (bt *batch) bytes(i int) []byte {
	p := &bt.entries[i]
	return bt.data[p.start:p.end:p.end]
}

const (
	batchEntries = 256
	batchBytes   = 512 << 10
	batchesAhead = 2 // batches sent to the decoder and not yet indexed, at most
)

// decoding passes batches to the decoder and takes them back, in order.
type decoding struct {
	cur      *batch
	todo     chan *batch
	done     chan *batch
	free     []*batch
	inFlight int
	started  bool
}

// add copies an entry into the current batch; it returns a batch decoded and ready to
// be indexed, or nil.
func (d *decoding) add(p pending, data []byte) *batch {
	if d.cur == nil {
		if n := len(d.free); n > 0 {
			d.cur, d.free = d.free[n-1], d.free[:n-1]
		} else {
			d.cur = &batch{data: make([]byte, 0, batchBytes), entries: make([]pending, 0, batchEntries)}
		}
	}
	p.start = len(d.cur.data)
	d.cur.data = append(d.cur.data, data...)
	p.end = len(d.cur.data)
	d.cur.entries = append(d.cur.entries, p)
	if len(d.cur.entries) < batchEntries && len(d.cur.data) < batchBytes {
		return nil
	}
	return d.send()
}

// send sends the current batch to the decoder, starting it first; it returns the
// oldest batch back from it once batchesAhead are out.
func (d *decoding) send() *batch {
	if !d.started {
		d.started = true
		d.todo, d.done = make(chan *batch, batchesAhead), make(chan *batch, batchesAhead+1)
		go decode(d.todo, d.done)
	}
	d.todo <- d.cur
	d.cur = nil
	if d.inFlight++; d.inFlight <= batchesAhead {
		return nil
	}
	d.inFlight--
	return <-d.done
}

// flush sends what is in the current batch and returns every batch still out, in order.
func (d *decoding) flush() []*batch {
	var out []*batch
	if d.cur != nil && len(d.cur.entries) > 0 {
		if bt := d.send(); bt != nil {
			out = append(out, bt)
		}
	}
	return append(out, d.rest()...)
}

func (d *decoding) rest() []*batch {
	var out []*batch
	for ; d.inFlight > 0; d.inFlight-- {
		out = append(out, <-d.done)
	}
	return out
}

// recycle returns an indexed batch for reuse, unless a large body grew it.
func (d *decoding) recycle(bt *batch) {
	if cap(bt.data) > 2*batchBytes {
		return
	}
	bt.data, bt.entries = bt.data[:0], bt.entries[:0]
	d.free = append(d.free, bt)
}

// stop ends the decoder once the batches sent are decoded.
func (d *decoding) stop() {
	if d.started {
		close(d.todo)
		for range d.done {
		}
		d.started = false
	}
}

// decode reads the metadata of every entry of each batch whose path is an object's
// and whose bytes are not the previous entry's (that copy is the index's to judge).
// The strings it keeps are in a slab of its own.
func decode(todo <-chan *batch, done chan<- *batch) {
	defer close(done)
	r := newMetaReader(strslab.New(1 << 16))
	for bt := range todo {
		for i := range bt.entries {
			p := &bt.entries[i]
			if p.err == nil && !p.dup {
				p.meta, p.metaErr = r.read(bt.bytes(i))
			}
		}
		done <- bt
	}
}
