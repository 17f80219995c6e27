package archive

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
)

// bodyRef is where the store keeps one body.
type bodyRef struct {
	off int64
	n   int32
	// unversioned: read from the 1.0 path, which a versioned copy of the same version
	// replaces.
	unversioned bool
	preferred   bool // read from the preferred version's directory
}

// bodyStore keeps object bodies one after another: in memory up to a budget, in
// chunks, then in one spill file whose offsets the references name. Bodies are only
// appended; a body once returned is never overwritten, so callers may keep the slices
// they are given.
//
// The spill file is written on a goroutine of its own, half the budget at a time,
// while the next half fills: at most the budget is in memory.
type bodyStore struct {
	dir     string // where the spill file is made
	budget  int
	spill   *spillWriter // nil until the budget is exceeded
	fileLen int64        // the bytes handed to spill: the bodies before it are in the file, or will be
	chunks  [][]byte     // the bodies after fileLen; a body never straddles two
	starts  []int64      // the offset of each chunk's first byte
	memLen  int
	// reuse lets the store take back the chunks spill has written, for the next
	// bodies: true while Read reads, as nobody holds a body yet.
	reuse  bool
	spare  [][]byte
	blocks blockCache // of the spill file
}

const chunkSize = 4 << 20

func (s *bodyStore) add(data []byte) (bodyRef, error) {
	if s.memLen+len(data) > s.budget/2 && s.memLen > 0 {
		if err := s.flush(); err != nil {
			return bodyRef{}, err
		}
	}
	last := len(s.chunks) - 1
	if last < 0 || cap(s.chunks[last])-len(s.chunks[last]) < len(data) {
		var c []byte
		if s.reuse && s.spill != nil {
			s.spare = s.spill.written(s.spare)
		}
		if n := len(s.spare); n > 0 && cap(s.spare[n-1]) >= len(data) {
			c, s.spare = s.spare[n-1][:0], s.spare[:n-1]
		} else {
			c = make([]byte, 0, max(chunkSize, len(data)))
		}
		s.chunks = append(s.chunks, c)
		s.starts = append(s.starts, s.fileLen+int64(s.memLen))
		last++
	}
	c := s.chunks[last]
	ref := bodyRef{off: s.starts[last] + int64(len(c)), n: int32(len(data))}
	s.chunks[last] = append(c, data...)
	s.memLen += len(data)
	return ref, nil
}

// flush hands the bodies in memory to the spill file's writer, waiting while it still
// writes the ones handed to it before.
func (s *bodyStore) flush() error {
	if s.spill == nil {
		f, err := os.CreateTemp(s.dir, "restoregraph-bodies-*")
		if err != nil {
			return fmt.Errorf("archive: spill file: %w", err)
		}
		s.spill = newSpillWriter(f, s.budget/chunkSize+2)
	}
	if err := s.spill.write(s.chunks, s.reuse); err != nil {
		return err
	}
	s.fileLen += int64(s.memLen)
	s.chunks, s.starts, s.memLen = nil, nil, 0
	return nil
}

// settle is called once every body is added: when some went to the spill file, the
// rest follow, and their memory is let go. The last bodies are then read from the file
// (that is, from the page cache) as the first are, and a backup of a million objects
// does not keep the budget's worth of them in its heap for the whole restore.
func (s *bodyStore) settle() error {
	if s.spill == nil {
		return nil
	}
	if s.memLen > 0 {
		if err := s.flush(); err != nil {
			return err
		}
	}
	err := s.spill.finish()
	s.spill.written(nil) // let go of the chunks written for reuse
	return err
}

// endReuse says that callers may now hold bodies: no chunk is filled again.
func (s *bodyStore) endReuse() {
	s.reuse, s.spare = false, nil
	if s.spill != nil {
		s.spill.written(nil)
	}
}

// get returns ref's bytes: the store's own, which the caller does not change, when they
// are held in memory; else a copy.
func (s *bodyStore) get(ref bodyRef) ([]byte, error) {
	if ref.off >= s.fileLen {
		i, _ := slices.BinarySearch(s.starts, ref.off+1)
		c, start := s.chunks[i-1], ref.off-s.starts[i-1]
		return c[start : start+int64(ref.n) : start+int64(ref.n)], nil
	}
	return s.appendSpilled(nil, ref)
}

// appendBody appends ref's bytes to dst.
func (s *bodyStore) appendBody(dst []byte, ref bodyRef) ([]byte, error) {
	if ref.off >= s.fileLen {
		b, _ := s.get(ref)
		return append(dst, b...), nil
	}
	return s.appendSpilled(dst, ref)
}

// appendSpilled appends ref's bytes, which the spill file holds, to dst.
func (s *bodyStore) appendSpilled(dst []byte, ref bodyRef) ([]byte, error) {
	if s.spill == nil {
		return nil, errors.New("archive: spill file: the backup was closed")
	}
	written, err := s.spill.wait(ref.off + int64(ref.n))
	if err != nil {
		return nil, err
	}
	start := ref.off / spillBlock * spillBlock
	if end := ref.off + int64(ref.n); end <= start+spillBlock {
		return s.blocks.appendBody(dst, s.spill.file, start, min(start+spillBlock, written), ref)
	}
	at := len(dst) // across blocks: read on its own
	dst = slices.Grow(dst, int(ref.n))[:at+int(ref.n)]
	if _, err := s.spill.file.ReadAt(dst[at:], ref.off); err != nil {
		return nil, fmt.Errorf("archive: spill file: %w", err)
	}
	return dst, nil
}

// The spill file is read a block at a time, and the last blocks read are kept: a
// restore asks for bodies in nearly the order they were written, so one read serves
// the bodies after it. Of a restore of 100k objects into the embedded server, 1.8% of
// the bodies were not in the blocks kept (one read of the file each, where every body
// was one), at 4 MiB held.
const (
	spillBlock  = 256 << 10
	spillBlocks = 16
)

// blockCache keeps the spill file's blocks read last.
type blockCache struct {
	mu    sync.Mutex
	tick  uint64
	slots [spillBlocks]cachedBlock
}

// cachedBlock is the bytes of a block that the file held when it was read.
type cachedBlock struct {
	start int64
	data  []byte
	used  uint64 // blockCache.tick when last read
}

// appendBody appends ref's bytes, which lie in the block at start, of which the file
// holds the bytes up to end, to dst; the block is read when it is not kept, or not as
// far.
func (c *blockCache) appendBody(dst []byte, f *os.File, start, end int64, ref bodyRef) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	var b *cachedBlock
	for i := range c.slots {
		s := &c.slots[i]
		if s.data != nil && s.start == start {
			b = s // kept, perhaps before the file held the body
			break
		}
		if b == nil || s.used < b.used {
			b = s
		}
	}
	if b.data == nil || b.start != start || b.start+int64(len(b.data)) < ref.off+int64(ref.n) {
		if cap(b.data) < spillBlock {
			b.data = make([]byte, spillBlock)
		}
		b.data = b.data[:end-start]
		if _, err := f.ReadAt(b.data, start); err != nil {
			b.data = nil
			return nil, fmt.Errorf("archive: spill file: %w", err)
		}
		b.start = start
	}
	b.used = c.tick
	at := ref.off - start
	return append(dst, b.data[at:at+int64(ref.n)]...), nil
}

// close removes the spill file.
func (s *bodyStore) close() error {
	if s.spill == nil {
		return nil
	}
	s.spill.finish()
	s.blocks.mu.Lock()
	s.blocks.slots = [spillBlocks]cachedBlock{}
	s.blocks.mu.Unlock()
	err := s.spill.file.Close()
	if rerr := os.Remove(s.spill.file.Name()); err == nil {
		err = rerr
	}
	s.spill = nil
	return err
}

// spillWriter appends chunks to the spill file on a goroutine of its own.
type spillWriter struct {
	file  *os.File
	queue chan spillJob // unbuffered: one set of chunks is written at a time
	done  chan struct{}
	spare chan []byte // chunks written, for the store to fill again
	once  sync.Once

	mu   sync.Mutex
	cond sync.Cond
	len  int64 // the bytes written
	err  error
}

func newSpillWriter(f *os.File, spare int) *spillWriter {
	w := &spillWriter{file: f, queue: make(chan spillJob), done: make(chan struct{}), spare: make(chan []byte, spare)}
	w.cond.L = &w.mu
	go w.run()
	return w
}

func (w *spillWriter) run() {
	defer close(w.done)
	for job := range w.queue {
		for _, c := range job.chunks {
			_, err := w.file.Write(c)
			w.mu.Lock()
			if err != nil && w.err == nil {
				w.err = fmt.Errorf("archive: spill file: %w", err)
			}
			w.len += int64(len(c))
			w.cond.Broadcast()
			w.mu.Unlock()
			if job.reuse {
				select {
				case w.spare <- c:
				default:
				}
			}
		}
	}
}

// spillJob is chunks to write, and whether the store may fill them again once written.
type spillJob struct {
	chunks [][]byte
	reuse  bool
}

// write hands chunks to the writer; it returns the error of an earlier write.
func (w *spillWriter) write(chunks [][]byte, reuse bool) error {
	w.mu.Lock()
	err := w.err
	w.mu.Unlock()
	if err != nil {
		return err
	}
	w.queue <- spillJob{chunks, reuse}
	return nil
}

// written appends to spare the chunks written since it was last called.
func (w *spillWriter) written(spare [][]byte) [][]byte {
	for {
		select {
		case c := <-w.spare:
			spare = append(spare, c)
		default:
			return spare
		}
	}
}

// wait waits until the file holds its first end bytes, or a write failed, and returns
// how many it holds.
func (w *spillWriter) wait(end int64) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.len < end && w.err == nil {
		w.cond.Wait()
	}
	return w.len, w.err
}

// finish waits for every write, ends the writer and returns the first error.
func (w *spillWriter) finish() error {
	w.once.Do(func() { close(w.queue) })
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
