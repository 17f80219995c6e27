package archive

import (
	"bytes"
	"sync/atomic"

	"github.com/restoregraph/restoregraph/internal/strslab"
)

// A backup without a manifest is read in three stages, each on a goroutine of its
// own, so that the walk of the tarball, decoding the bodies' metadata (the costliest
// part of the read after the inflate) and the index run side by side: the walk copies
// resource entries into batches; the decoder reads each batch's metadata; the index
// takes the batches in the order they were read and places each body (readItem).
// Errors are met in the tarball's order, as in a read with one goroutine: the first
// the index meets stops it, and the walk stops at its next batch.

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
	batchesAhead = 2 // batches waiting for each stage, at most
)

// decoding passes batches from the walk to the decoder, from the decoder to the index,
// and from the index back to the walk for reuse.
type decoding struct {
	cur      *batch
	last     []byte      // the last entry's bytes, when its batch has been sent
	todo     chan *batch // to the decoder
	free     chan *batch // indexed, for reuse
	ended    chan error  // the index's first error, or nil once every batch is indexed
	failed   atomic.Bool // the index met an error
	started  bool
	finished bool
}

// add copies an entry into the current batch, and sends the batch on when it is full.
// An entry whose bytes are the previous entry's (dup) shares them when that entry is in
// the batch.
// It returns the index's error once the index has met one: the walk then stops.
func (d *decoding) add(p pending, data []byte, index func(*batch) error) error {
	if d.cur == nil {
		select {
		case d.cur = <-d.free:
			d.cur.data, d.cur.entries = d.cur.data[:0], d.cur.entries[:0]
		default:
			d.cur = &batch{data: make([]byte, 0, batchBytes), entries: make([]pending, 0, batchEntries)}
		}
	}
	if n := len(d.cur.entries); p.dup && n > 0 {
		// The second copy of an object shares the first's bytes, which it repeats.
		p.start, p.end = d.cur.entries[n-1].start, d.cur.entries[n-1].end
	} else {
		p.start = len(d.cur.data)
		d.cur.data = append(d.cur.data, data...)
		p.end = len(d.cur.data)
	}
	d.cur.entries = append(d.cur.entries, p)
	if len(d.cur.entries) < batchEntries && len(d.cur.data) < batchBytes {
		return nil
	}
	return d.send(index)
}

// repeats reports whether data are the bytes of the entry added last: the walk reads
// each entry in place and compares it with the copy in the batch, where it would
// otherwise copy each entry twice.
func (d *decoding) repeats(data []byte) bool {
	if d.cur != nil && len(d.cur.entries) > 0 {
		return bytes.Equal(d.cur.bytes(len(d.cur.entries)-1), data)
	}
	return bytes.Equal(d.last, data)
}

// send sends the current batch to the decoder, starting the decoder and the index
// first. It keeps a copy of the batch's last entry, which the decoder and the index
// share from then on, for repeats.
func (d *decoding) send(index func(*batch) error) error {
	if n := len(d.cur.entries); n > 0 {
		d.last = append(d.last[:0], d.cur.bytes(n-1)...)
	}
	if !d.started {
		d.started = true
		d.todo, d.free, d.ended = make(chan *batch, batchesAhead), make(chan *batch, 2*batchesAhead+2), make(chan error, 1)
		decoded := make(chan *batch, batchesAhead)
		go decode(d.todo, decoded)
		go d.index(decoded, index)
	}
	if d.failed.Load() {
		return d.finish(index)
	}
	d.todo <- d.cur
	d.cur = nil
	return nil
}

// index indexes the decoded batches in order until one fails, then only drains them.
func (d *decoding) index(decoded <-chan *batch, index func(*batch) error) {
	var err error
	for bt := range decoded {
		if err == nil {
			if err = index(bt); err != nil {
				d.failed.Store(true)
			}
		}
		if cap(bt.data) <= 2*batchBytes { // unless a large body grew it
			select {
			case d.free <- bt:
			default:
			}
		}
	}
	d.ended <- err
}

// finish sends what is in the current batch and waits until every batch is indexed; it
// returns the index's error, if any.
func (d *decoding) finish(index func(*batch) error) error {
	if d.finished {
		return nil
	}
	if d.cur != nil && len(d.cur.entries) > 0 && !d.failed.Load() {
		if err := d.send(index); err != nil {
			return err
		}
	}
	d.finished = true
	if !d.started {
		return nil
	}
	close(d.todo)
	return <-d.ended
}

// stop ends the decoder and the index, if they still run, once the batches sent are
// through.
func (d *decoding) stop() {
	if d.started && !d.finished {
		d.finished = true
		close(d.todo)
		<-d.ended
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
