package clirun

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two clones' benchmarks run side by side must not run each other's build: each tree
// gets a directory of its own, the same one every time.
func TestEachTreeBuildsIntoItsOwnDirectory(t *testing.T) {
	cache := t.TempDir()
	a, err := binDir(cache, "/tmp/one/cmd/restoregraph")
	require.NoError(t, err)
	b, err := binDir(cache, "/tmp/two/cmd/restoregraph")
	require.NoError(t, err)
	again, err := binDir(cache, "/tmp/one/cmd/../cmd/restoregraph")
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
	assert.Equal(t, a, again, "the same tree, spelled otherwise")
	assert.Equal(t, filepath.Join(cache, "restoregraph", "bin"), filepath.Dir(a))
}
