package archive

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
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

// A block read before the file held all of it is read again for a body past what it
// held.
func TestBlockReadBeforeItWasWhole(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "spill")
	require.NoError(t, err)
	defer f.Close()
	first, second := bytes.Repeat([]byte("a"), 1000), bytes.Repeat([]byte("b"), 1000)
	_, err = f.Write(first)
	require.NoError(t, err)
	var c blockCache
	got, err := c.appendBody(nil, f, 0, 1000, bodyRef{off: 0, n: 1000})
	require.NoError(t, err)
	assert.Equal(t, first, got)
	_, err = f.Write(second)
	require.NoError(t, err)
	got, err = c.appendBody(nil, f, 0, 2000, bodyRef{off: 1000, n: 1000})
	require.NoError(t, err)
	assert.Equal(t, second, got)
}
