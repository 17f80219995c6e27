package archive

import (
	"bytes"
	"fmt"
	"testing"

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
	require.NoError(t, s.spill.wait(chunkSize))
	require.NoError(t, s.spill.file.Close())
	_, err = s.add(make([]byte, chunkSize)) // spills the second, which fails
	require.NoError(t, err)
	require.Error(t, s.spill.wait(2*chunkSize))
	_, err = s.add(make([]byte, chunkSize))
	assert.ErrorContains(t, err, "spill file")
	_, err = s.get(first)
	assert.ErrorContains(t, err, "spill file")
	assert.ErrorContains(t, s.settle(), "spill file")
}
