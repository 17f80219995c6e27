// Package readahead overlaps producing bytes with consuming them: a Reader reads its
// source on a goroutine of its own, a few blocks ahead of the consumer.
package readahead

import (
	"io"
	"sync"
)

// Reader reads r on its own goroutine, up to depth blocks ahead of the consumer, so
// that producing the bytes (inflating gzip) and consuming them (parsing) run at once.
// Close must be called; it stops the goroutine and waits for it.
//
// Besides Read, it has bufio.Reader's Peek and Discard, which read the blocks where
// they lie: a consumer that parses what it peeks copies nothing it does not keep.
type Reader struct {
	blocks chan []byte
	free   chan []byte
	stop   chan struct{}
	done   chan struct{}
	err    error // set by the producer before it closes blocks
	cur    []byte
	buf    []byte // the block cur lies in, returned to free when consumed
	// carry holds bytes taken out of blocks given back, for a Peek across the end of a
	// block: they are read before cur.
	carry, carried []byte // carried is carry's unread part
	once           sync.Once
}

// New starts reading r in blocks of blockSize bytes, at most depth blocks ahead.
func New(r io.Reader, blockSize, depth int) *Reader {
	ra := &Reader{
		blocks: make(chan []byte, depth),
		free:   make(chan []byte, depth+1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	for range depth + 1 {
		ra.free <- make([]byte, blockSize)
	}
	go ra.produce(r)
	return ra
}

func (ra *Reader) produce(r io.Reader) {
	defer close(ra.done)
	defer close(ra.blocks)
	for {
		var buf []byte
		select {
		case buf = <-ra.free:
		case <-ra.stop:
			return
		}
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			select {
			case ra.blocks <- buf[:n]:
			case <-ra.stop:
				return
			}
		}
		if err == io.ErrUnexpectedEOF {
			err = io.EOF
		}
		if err != nil {
			ra.err = err
			return
		}
	}
}

// fill makes cur the next block, giving the one it lay in back, and returns the
// source's error when there is none.
func (ra *Reader) fill() error {
	for len(ra.cur) == 0 {
		if ra.buf != nil {
			ra.free <- ra.buf[:cap(ra.buf)]
			ra.buf = nil
		}
		b, ok := <-ra.blocks
		if !ok {
			return ra.err // happens-after the producer's write, by the channel close
		}
		ra.cur, ra.buf = b, b
	}
	return nil
}

func (ra *Reader) Read(p []byte) (int, error) {
	if len(ra.carried) > 0 {
		n := copy(p, ra.carried)
		ra.carried = ra.carried[n:]
		return n, nil
	}
	if err := ra.fill(); err != nil {
		return 0, err
	}
	n := copy(p, ra.cur)
	ra.cur = ra.cur[n:]
	return n, nil
}

// Peek returns the next n bytes without consuming them, valid until the next call on
// ra. Within a block they are the block's bytes; across the end of one they are copied
// out. Fewer than n are returned, with the source's error, only at its end.
func (ra *Reader) Peek(n int) ([]byte, error) {
	switch {
	case len(ra.carried) >= n:
		return ra.carried[:n], nil
	case len(ra.carried) > 0:
		ra.carried = append(ra.carry[:0], ra.carried...) // to the front, to grow in place
	case len(ra.cur) >= n:
		return ra.cur[:n], nil
	default:
		ra.carried = ra.carry[:0]
	}
	defer func() { ra.carry = ra.carried[:0] }() // carried starts at carry's start
	for len(ra.carried) < n {
		if len(ra.cur) == 0 {
			if err := ra.fill(); err != nil {
				return ra.carried, err
			}
		}
		k := min(n-len(ra.carried), len(ra.cur))
		ra.carried = append(ra.carried, ra.cur[:k]...)
		ra.cur = ra.cur[k:]
	}
	return ra.carried[:n], nil
}

// Discard skips the next n bytes, and returns how many it skipped: fewer than n only
// with the source's error.
func (ra *Reader) Discard(n int) (int, error) {
	skipped := 0
	for skipped < n {
		if len(ra.carried) > 0 {
			k := min(n-skipped, len(ra.carried))
			ra.carried = ra.carried[k:]
			skipped += k
			continue
		}
		if len(ra.cur) == 0 {
			if err := ra.fill(); err != nil {
				return skipped, err
			}
		}
		k := min(n-skipped, len(ra.cur))
		ra.cur = ra.cur[k:]
		skipped += k
	}
	return skipped, nil
}

// Close stops the reading goroutine and waits for it to end.
func (ra *Reader) Close() {
	ra.once.Do(func() { close(ra.stop) })
	<-ra.done
}
