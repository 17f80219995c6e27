package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/restoregraph/restoregraph/archive"
)

// The demo restores one Cluster API cluster's backup into the embedded server: every
// object restored, none collected, every ownership link kept, where the model of
// Velero's restore keeps none; and it draws the plan and the timeline.
func TestDemo(t *testing.T) {
	d := capiDemo{clusters: 1, workers: 16, out: t.TempDir(), latency: time.Millisecond}
	var out strings.Builder
	require.NoError(t, d.run(&out))
	stdout := out.String()
	b, err := archive.ReadFile(t.Context(), filepath.Join(d.out, "backup.tar.gz"), archive.Options{})
	require.NoError(t, err)
	n := b.Manifest().Len()
	b.Close()
	assert.Contains(t, stdout, fmt.Sprintf("%d restored, 0 failed, 0 skipped", n))
	assert.Contains(t, stdout, "objects deleted by the garbage collector afterwards: 0")
	kept := regexp.MustCompile(`ownership links kept, pointing at the new owners: (\d+) of (\d+)\n`).FindStringSubmatch(stdout)
	require.Len(t, kept, 3, stdout)
	assert.Equal(t, kept[2], kept[1], "restoregraph keeps every link")
	assert.NotEqual(t, "0", kept[2])
	assert.Contains(t, stdout, fmt.Sprintf("ownerReferences removed as Velero removes them):\n  %d objects", n))
	assert.Regexp(t, `ownership links kept: 0 of [1-9]`, stdout, "the model of Velero keeps none")
	for _, f := range []string{"backup.tar.gz", "plan.json", "plan.dot", "plan.svg", "report.json", "timeline.svg"} {
		info, err := os.Stat(filepath.Join(d.out, f))
		require.NoError(t, err, f)
		assert.Positive(t, info.Size(), f)
	}
	svg, _ := os.ReadFile(filepath.Join(d.out, "timeline.svg"))
	assert.True(t, bytes.Contains(svg, []byte(fmt.Sprintf("Restore timeline: %d objects", n))), "the timeline names its objects")
	assert.Equal(t, n, bytes.Count(svg, []byte(`fill="#3b7dd8"><title>`)), "one creating bar per object")
	plan, _ := os.ReadFile(filepath.Join(d.out, "plan.svg"))
	assert.True(t, bytes.HasPrefix(bytes.TrimSpace(plan), []byte("<?xml")), "Graphviz drew the plan")
	assert.Equal(t, n, bytes.Count(plan, []byte(`class="node"`)), "a node for each object")
}
