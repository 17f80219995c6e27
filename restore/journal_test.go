package restore

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

func TestJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal")
	j, err := OpenJournal(path)
	require.NoError(t, err)
	assert.Empty(t, j.Journaled())
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "what a restore did is its owner's to read")
	j.SyncEvery = 2
	require.NoError(t, j.Record("a", "A", Restored))
	require.NoError(t, j.Record("b", "B", Adopted))
	require.NoError(t, j.Close())

	// A crash mid-write leaves a torn last line.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"source":"c","ne`)
	f.Close()

	j, err = OpenJournal(path)
	require.NoError(t, err)
	assert.Equal(t, map[types.UID]Journaled{"a": {"A", Restored}, "b": {"B", Adopted}}, j.Journaled())
	require.NoError(t, j.Record("c", "C", Updated))
	require.NoError(t, j.Close())
	j, err = OpenJournal(path)
	require.NoError(t, err)
	assert.Equal(t, Journaled{"C", Updated}, j.Journaled()["c"], "the torn line was overwritten, not appended to")
	require.NoError(t, j.Close())

	data, _ := os.ReadFile(path)
	require.NoError(t, os.WriteFile(path, append([]byte("garbage\n"), data...), 0o644))
	_, err = OpenJournal(path)
	assert.ErrorIs(t, err, ErrJournalCorrupt)
	assert.ErrorContains(t, err, "line 1")
}
