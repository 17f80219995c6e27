package readahead

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadsEverythingInOrder(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 10_000)
	r := New(iotest.HalfReader(bytes.NewReader(data)), 4096, 3)
	defer r.Close()
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.Equal(t, data, got)
}

func TestPassesTheSourcesError(t *testing.T) {
	boom := errors.New("boom")
	r := New(io.MultiReader(bytes.NewReader(make([]byte, 10_000)), iotest.ErrReader(boom)), 4096, 2)
	defer r.Close()
	got, err := io.ReadAll(r)
	assert.ErrorIs(t, err, boom)
	assert.Len(t, got, 10_000, "everything before the error")
}

func TestCloseBeforeTheEnd(t *testing.T) {
	r := New(bytes.NewReader(make([]byte, 1<<20)), 4096, 2)
	_, err := r.Read(make([]byte, 10))
	require.NoError(t, err)
	r.Close() // returns: the producer stops though blocks remain
}

// TestPeekAndDiscardReadAsBufio holds Peek, Discard and Read, mixed at random over
// blocks of several sizes, to bufio.Reader's over the same bytes: peeks within a block,
// across the ends of blocks and past the end of the source.
func TestPeekAndDiscardReadAsBufio(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 50_000)
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	for _, block := range []int{1, 7, 512, 4096, 60_000} {
		ra := New(iotest.OneByteReader(bytes.NewReader(data)), block, 2)
		br := bufio.NewReaderSize(bytes.NewReader(data), 1<<20)
		for step := 0; ; step++ {
			n := rng.IntN(3000)
			switch rng.IntN(3) {
			case 0:
				got, gotErr := ra.Peek(n)
				want, wantErr := br.Peek(n)
				require.Equal(t, want, got, "block %d step %d: Peek(%d)", block, step, n)
				require.Equal(t, wantErr, gotErr, "block %d step %d: Peek(%d)", block, step, n)
			case 1:
				got, gotErr := ra.Discard(n)
				want, wantErr := br.Discard(n)
				require.Equal(t, want, got, "block %d step %d: Discard(%d)", block, step, n)
				require.Equal(t, wantErr, gotErr, "block %d step %d: Discard(%d)", block, step, n)
			default:
				got, want := make([]byte, n), make([]byte, n)
				gotN, gotErr := io.ReadFull(ra, got)
				wantN, wantErr := io.ReadFull(br, want)
				require.Equal(t, want[:wantN], got[:gotN], "block %d step %d: ReadFull(%d)", block, step, n)
				require.Equal(t, wantErr, gotErr, "block %d step %d: ReadFull(%d)", block, step, n)
			}
			if _, err := br.Peek(1); err == io.EOF {
				_, err := ra.Peek(1)
				require.Equal(t, io.EOF, err, "block %d: the end", block)
				break
			}
		}
		ra.Close()
	}
}
