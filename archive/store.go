package archive

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/klauspost/compress/s2"
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
// (that is, from the page cache, compressed) as the first are, and a backup of a
// million objects does not keep the budget's worth of them in its heap for the whole
// restore.
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

// appendSpilled appends ref's bytes, which the spill file holds, to dst: from the
// blocks it lies in, each decompressed once and kept while it is read from.
func (s *bodyStore) appendSpilled(dst []byte, ref bodyRef) ([]byte, error) {
	if s.spill == nil {
		return nil, errors.New("archive: spill file: the backup was closed")
	}
	blocks, err := s.spill.wait(ref.off + int64(ref.n))
	if err != nil {
		return nil, err
	}
	dst = slices.Grow(dst, int(ref.n))
	// The last block that starts at or before the body's first byte, then the ones after
	// it until the body ends; blocks are laid end to end.
	after, _ := slices.BinarySearchFunc(blocks, ref.off+1, func(b spilledBlock, off int64) int { return cmp.Compare(b.start, off) })
	for k, off, end := after-1, ref.off, ref.off+int64(ref.n); off < end; k++ {
		if dst, err = s.blocks.appendRange(dst, s.spill.file, k, blocks[k], off, end); err != nil {
			return nil, err
		}
		off = blocks[k].start + int64(blocks[k].size)
	}
	return dst, nil
}

// The spill file holds the bodies s2-compressed, a block at a time: the bodies of one
// backup repeat each other's keys and values, so the file is a fraction of their size.
// The kernel writes and reads that fraction of the bytes, and about that fraction of
// the page cache is taken. A restore asks for the bodies of what is ready, which is
// near the order they were written when owners come before their dependents; where it
// is not (long owner chains whose objects Velero wrote apart, a resource after another),
// nearly every body is in a block not kept. So the blocks are small, that a body read
// from a block not kept decompresses little beside it, and many are kept: 2 MiB of
// blocks. Smaller blocks compress a little less, as s2 finds fewer repeats in each.
const (
	spillBlock  = 32 << 10 // of bodies, before compression
	spillBlocks = 64
)

// spilledBlock is one block of the spill file: where its bodies start among all the
// bodies spilled, and its bytes in the file, compressed and not.
type spilledBlock struct {
	start int64 // of its first byte, among the bodies
	off   int64 // in the file
	n     int32 // in the file
	size  int32 // decompressed
}

// blockCache keeps the spill file's blocks decompressed last.
type blockCache struct {
	mu    sync.Mutex
	tick  uint64
	slots [spillBlocks]cachedBlock
	raw   []byte // a block's compressed bytes, as read
}

// cachedBlock is a decompressed block.
type cachedBlock struct {
	index int // in the file's blocks; -1 for none
	data  []byte
	used  uint64 // blockCache.tick when last read
}

// appendRange appends the bytes from off to end, or to the end of block b (the
// index-th), whichever comes first, to dst; the block is read and decompressed when it
// is not kept.
func (c *blockCache) appendRange(dst []byte, f *os.File, index int, b spilledBlock, off, end int64) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	var slot *cachedBlock
	for i := range c.slots {
		s := &c.slots[i]
		if s.data != nil && s.index == index {
			slot = s
			break
		}
		if slot == nil || s.used < slot.used {
			slot = s
		}
	}
	if slot.data == nil || slot.index != index {
		buf := slot.data
		slot.data, slot.index = nil, -1
		if cap(buf) < int(b.size) {
			buf = make([]byte, b.size)
		}
		if cap(c.raw) < int(b.n) {
			c.raw = make([]byte, b.n)
		}
		raw := c.raw[:b.n]
		if _, err := f.ReadAt(raw, b.off); err != nil {
			return nil, fmt.Errorf("archive: spill file: %w", err)
		}
		data, err := s2.Decode(buf[:cap(buf)], raw)
		if err == nil && len(data) != int(b.size) {
			err = fmt.Errorf("%d bytes where %d were written", len(data), b.size)
		}
		if err != nil {
			return nil, fmt.Errorf("archive: spill file: block at %d: %w", b.off, err)
		}
		slot.data, slot.index = data, index
	}
	slot.used = c.tick
	from, to := off-b.start, min(end-b.start, int64(b.size))
	return append(dst, slot.data[from:to]...), nil
}

// close removes the spill file.
func (s *bodyStore) close() error {
	if s.spill == nil {
		return nil
	}
	s.spill.finish()
	s.blocks.mu.Lock()
	s.blocks.slots, s.blocks.raw = [spillBlocks]cachedBlock{}, nil
	s.blocks.mu.Unlock()
	err := s.spill.file.Close()
	if rerr := os.Remove(s.spill.file.Name()); err == nil {
		err = rerr
	}
	s.spill = nil
	return err
}

// spillWriter appends chunks to the spill file on a goroutine of its own, compressed a
// block at a time.
type spillWriter struct {
	file  *os.File
	queue chan spillJob // unbuffered: one set of chunks is written at a time
	done  chan struct{}
	spare chan []byte // chunks written, for the store to fill again
	once  sync.Once

	mu     sync.Mutex
	cond   sync.Cond
	len    int64          // the bodies' bytes written
	blocks []spilledBlock // written; only appended to
	err    error
}

func newSpillWriter(f *os.File, spare int) *spillWriter {
	w := &spillWriter{file: f, queue: make(chan spillJob), done: make(chan struct{}), spare: make(chan []byte, spare)}
	w.cond.L = &w.mu
	go w.run()
	return w
}

func (w *spillWriter) run() {
	defer close(w.done)
	var out []byte            // a chunk's blocks, compressed
	var blocks []spilledBlock // theirs
	var fileLen int64
	for job := range w.queue {
		for _, c := range job.chunks {
			// A chunk's blocks, compressed one after another into one write. Blocks are
			// cut within a chunk, never across two.
			out, blocks = out[:0], blocks[:0]
			start := w.len // only this goroutine changes it
			for at := 0; at < len(c); at += spillBlock {
				b := c[at:min(at+spillBlock, len(c))]
				from := len(out)
				out = slices.Grow(out, s2.MaxEncodedLen(len(b)))
				out = out[:from+len(s2.Encode(out[from:cap(out)], b))]
				blocks = append(blocks, spilledBlock{start: start + int64(at), off: fileLen + int64(from),
					n: int32(len(out) - from), size: int32(len(b))})
			}
			_, err := w.file.Write(out)
			w.mu.Lock()
			if err != nil && w.err == nil {
				w.err = fmt.Errorf("archive: spill file: %w", err)
			}
			w.blocks = append(w.blocks, blocks...)
			w.len += int64(len(c))
			w.cond.Broadcast()
			w.mu.Unlock()
			fileLen += int64(len(out))
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

// wait waits until the file holds the bodies' first end bytes, or a write failed, and
// returns its blocks so far: a prefix of them that is never changed.
func (w *spillWriter) wait(end int64) ([]spilledBlock, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.len < end && w.err == nil {
		w.cond.Wait()
	}
	return w.blocks, w.err
}

// finish waits for every write, ends the writer and returns the first error.
func (w *spillWriter) finish() error {
	w.once.Do(func() { close(w.queue) })
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
