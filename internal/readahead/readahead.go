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
type Reader struct {
	blocks chan []byte
	free   chan []byte
	stop   chan struct{}
	done   chan struct{}
	err    error // set by the producer before it closes blocks
	cur    []byte
	buf    []byte // the block cur lies in, returned to free when consumed
	once   sync.Once
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

func (ra *Reader) Read(p []byte) (int, error) {
	for len(ra.cur) == 0 {
		if ra.buf != nil {
			ra.free <- ra.buf[:cap(ra.buf)]
			ra.buf = nil
		}
		b, ok := <-ra.blocks
		if !ok {
			return 0, ra.err // happens-after the producer's write, by the channel close
		}
		ra.cur, ra.buf = b, b
	}
	n := copy(p, ra.cur)
	ra.cur = ra.cur[n:]
	return n, nil
}

// Close stops the reading goroutine and waits for it to end.
func (ra *Reader) Close() {
	ra.once.Do(func() { close(ra.stop) })
	<-ra.done
}
