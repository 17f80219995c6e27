package restore

import (
	"os"
	"path/filepath"
	"testing"
	"time"

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
	require.NoError(t, j.Record("a", Journaled{New: "A", Status: Restored}))
	require.NoError(t, j.Record("b", Journaled{New: "B", Status: Adopted}))
	require.NoError(t, j.Close())

	// A crash mid-write leaves a torn last line.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"source":"c","ne`)
	f.Close()

	j, err = OpenJournal(path)
	require.NoError(t, err)
	assert.Equal(t, map[types.UID]Journaled{"a": {New: "A", Status: Restored}, "b": {New: "B", Status: Adopted}}, j.Journaled())
	require.NoError(t, j.Record("c", Journaled{New: "C", Status: Updated}))
	require.NoError(t, j.Close())
	j, err = OpenJournal(path)
	require.NoError(t, err)
	assert.Equal(t, Journaled{New: "C", Status: Updated}, j.Journaled()["c"], "the torn line was overwritten, not appended to")
	require.NoError(t, j.Close())

	// An object recorded again, as its operations end: the last record holds.
	j, err = OpenJournal(path)
	require.NoError(t, err)
	started := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	op := Operation{Plugin: "copier", ID: "op-1", Started: started, Phase: OperationInProgress}
	require.NoError(t, j.Record("d", Journaled{New: "D", Status: Restored, Operations: []Operation{op}}))
	op.Phase, op.Ended = OperationCompleted, started.Add(time.Minute)
	require.NoError(t, j.Record("d", Journaled{New: "D", Status: Restored, Operations: []Operation{op}}))
	require.NoError(t, j.Close())
	j, err = OpenJournal(path)
	require.NoError(t, err)
	assert.Equal(t, Journaled{New: "D", Status: Restored, Operations: []Operation{op}}, j.Journaled()["d"])
	require.NoError(t, j.Close())

	data, _ := os.ReadFile(path)
	require.NoError(t, os.WriteFile(path, append([]byte("garbage\n"), data...), 0o644))
	_, err = OpenJournal(path)
	assert.ErrorIs(t, err, ErrJournalCorrupt)
	assert.ErrorContains(t, err, "line 1")
}
