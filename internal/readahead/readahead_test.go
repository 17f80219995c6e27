package readahead

import (
	"bytes"
	"errors"
	"io"
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
