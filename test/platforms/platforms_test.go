package platforms

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "write the platforms' manifests again")

// testdata/platforms holds each platform's manifests as its module at the version
// go.mod pins renders them.
func TestRenderedIsCurrent(t *testing.T) {
	for _, p := range All {
		t.Run(p.Name, func(t *testing.T) {
			rendered, err := p.Render()
			require.NoError(t, err)
			path := filepath.Join("..", "..", "testdata", "platforms", p.Name+".yaml")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, rendered, 0o644))
			}
			current, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, string(rendered), string(current), "%s is not %s rendered: make platforms", path, p.Module)
		})
	}
}
