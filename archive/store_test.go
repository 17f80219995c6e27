package archive

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Bodies read back while the spill file is still being written are whole: a body
// handed to the writer is read from the file once the writer has written it.
func TestStoreReadsWhatItSpillsWhileItWrites(t *testing.T) {
	s := bodyStore{dir: t.TempDir(), budget: 3 * chunkSize, reuse: true}
	defer s.close()
	body := func(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("%07d,", i)), 1+i%3000) }
	var refs []bodyRef
	for i := range 3000 {
		ref, err := s.add(body(i))
		require.NoError(t, err)
		refs = append(refs, ref)
		if i%7 == 0 { // one added a while ago, perhaps handed to the writer just now
			j := i * 5 / 7
			got, err := s.get(refs[j])
			require.NoError(t, err)
			require.Equal(t, body(j), got, "body %d, read after %d", j, i)
		}
	}
	require.NotNil(t, s.spill, "the budget was exceeded")
	require.NoError(t, s.settle())
	s.endReuse()
	for i, ref := range refs {
		got, err := s.get(ref)
		require.NoError(t, err)
		require.Equal(t, body(i), got, "body %d", i)
	}
	assert.Zero(t, s.memLen)
	require.NoError(t, s.close())
	_, err := s.get(refs[0])
	assert.ErrorContains(t, err, "closed", "a body read after Close")
}

// A failed write of the spill file fails the next add that spills, and the read of a
// body that was in it.
func TestStoreSpillWriteError(t *testing.T) {
	s := bodyStore{dir: t.TempDir(), budget: 2 * chunkSize}
	defer s.close()
	first, err := s.add(make([]byte, chunkSize))
	require.NoError(t, err)
	_, err = s.add(make([]byte, chunkSize)) // spills the first
	require.NoError(t, err)
	_, err = s.spill.wait(chunkSize)
	require.NoError(t, err)
	require.NoError(t, s.spill.file.Close())
	_, err = s.add(make([]byte, chunkSize)) // spills the second, which fails
	require.NoError(t, err)
	_, err = s.spill.wait(2 * chunkSize)
	require.Error(t, err)
	_, err = s.add(make([]byte, chunkSize))
	assert.ErrorContains(t, err, "spill file")
	_, err = s.get(first)
	assert.ErrorContains(t, err, "spill file")
	assert.ErrorContains(t, s.settle(), "spill file")
}

// Bodies read from the spill file in any order, at once, across the blocks it is read
// in and larger than one, are what was added, whether returned or appended to a
// buffer: the blocks kept hold the file's bytes.
func TestStoreReadsSpilledBodiesInAnyOrder(t *testing.T) {
	s := bodyStore{dir: t.TempDir(), budget: chunkSize}
	defer s.close()
	body := func(i int) []byte {
		n := 1 + i%5000
		if i%997 == 0 {
			n = spillBlock + 1000 // larger than a block
		}
		return bytes.Repeat([]byte(fmt.Sprintf("%07d,", i)), n/8+1)
	}
	var refs []bodyRef
	for i := range 4000 {
		ref, err := s.add(body(i))
		require.NoError(t, err)
		refs = append(refs, ref)
	}
	require.NoError(t, s.settle())
	s.endReuse()
	require.Greater(t, s.fileLen, int64(spillBlocks*spillBlock), "more blocks than are kept")
	order := rand.New(rand.NewPCG(1, 2)).Perm(len(refs))
	var g errgroup.Group
	for w := range 4 {
		g.Go(func() error {
			buf := []byte("w") // each other body appended after it, in a buffer used again
			for n, i := range order[w*len(order)/4 : (w+1)*len(order)/4] {
				var got []byte
				var err error
				if n%2 == 0 {
					got, err = s.get(refs[i])
				} else if buf, err = s.appendBody(buf[:1], refs[i]); err == nil {
					if buf[0] != 'w' {
						return fmt.Errorf("body %d: appended over what the buffer held", i)
					}
					got = buf[1:]
				}
				if err != nil {
					return err
				}
				if !bytes.Equal(body(i), got) {
					return fmt.Errorf("body %d: %.40q", i, got)
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	got, err := s.get(refs[1])
	require.NoError(t, err)
	got[0] = 'x' // a copy: the block kept is not changed
	again, err := s.get(refs[1])
	require.NoError(t, err)
	assert.Equal(t, body(1), again)
}

// The spill file holds the bodies compressed: generated bodies, which repeat each
// other's keys and values as a backup's objects do, take a fifth of their size or less.
func TestSpillFileIsCompressed(t *testing.T) {
	s := bodyStore{dir: t.TempDir(), budget: chunkSize}
	defer s.close()
	body := func(i int) []byte {
		return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d","namespace":"ns-%d"},"data":{"k":"%x"}}`, i, i/100, i*7919)
	}
	var refs []bodyRef
	var total int64
	for i := range 100_000 {
		ref, err := s.add(body(i))
		require.NoError(t, err)
		refs = append(refs, ref)
		total += int64(ref.n)
	}
	require.NoError(t, s.settle())
	s.endReuse()
	require.Greater(t, s.fileLen, total/2, "most bodies spilled")
	info, err := s.spill.file.Stat()
	require.NoError(t, err)
	assert.Less(t, info.Size(), s.fileLen/5, "%d bytes of bodies in a file of %d", s.fileLen, info.Size())
	for _, i := range []int{0, 1, 50_000, 99_999} {
		got, err := s.get(refs[i])
		require.NoError(t, err)
		assert.Equal(t, body(i), got)
	}
}

// A spill file changed under the store fails the read of a body in the block changed,
// with an error that says so, and returns no bytes for it.
func TestSpillFileCorrupted(t *testing.T) {
	s := bodyStore{dir: t.TempDir(), budget: chunkSize}
	defer s.close()
	body := bytes.Repeat([]byte("abcdefgh"), spillBlock/8)
	var refs []bodyRef
	for range 3 * chunkSize / len(body) {
		ref, err := s.add(body)
		require.NoError(t, err)
		refs = append(refs, ref)
	}
	require.NoError(t, s.settle())
	s.endReuse()
	got, err := s.get(refs[0])
	require.NoError(t, err)
	require.Equal(t, body, got)
	info, err := s.spill.file.Stat()
	require.NoError(t, err)
	_, err = s.spill.file.WriteAt(bytes.Repeat([]byte{0xff}, int(info.Size())), 0)
	require.NoError(t, err)
	got, err = s.get(refs[len(refs)/2]) // a block not kept
	assert.ErrorContains(t, err, "archive: spill file: block at")
	assert.Nil(t, got)
}
