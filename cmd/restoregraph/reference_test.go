package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// update writes docs/reference/cli.md anew: go test -run TestReferenceIsGenerated -update
// (make docs).
var update = flag.Bool("update", false, "write docs/reference/cli.md from the command's definitions")

const reference = "../../docs/reference/cli.md"

// TestReferenceIsGenerated holds docs/reference/cli.md to the command's definitions:
// every command and flag, as cobra's doc generator writes them. A change to a command
// that leaves the reference behind fails here; make docs writes it again.
func TestReferenceIsGenerated(t *testing.T) {
	got := cliReference(t)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(reference), 0o755))
		require.NoError(t, os.WriteFile(reference, got, 0o644))
		return
	}
	want, err := os.ReadFile(reference)
	require.NoError(t, err, "make docs writes it")
	assert.Equal(t, string(want), string(got), "docs/reference/cli.md is not what the commands say: make docs")
}

// cliReference is the reference of every command, one section each, in one document;
// the defaults that depend on the machine (the home and temporary directories) are
// written as the variables they come from.
func cliReference(t *testing.T) []byte {
	root, _ := newRoot()
	root.DisableAutoGenTag = true
	home, _ := os.UserHomeDir()
	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c != root {
			return
		}
		c.DisableAutoGenTag = true
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				switch {
				case f.Name == "embedded-data-dir":
					f.DefValue = "$TMPDIR"
				case home != "" && strings.Contains(f.DefValue, home):
					f.DefValue = strings.ReplaceAll(f.DefValue, home, "$HOME")
				}
			})
		}
		cmds = append(cmds, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	var out bytes.Buffer
	out.WriteString("# The restoregraph command\n\nGenerated from the command's definitions by `make docs` " +
		"(cmd/restoregraph/reference_test.go); CI checks that it is current.\n\n")
	for _, c := range cmds {
		out.WriteString("- [" + c.CommandPath() + "](#" + anchor(c.CommandPath()) + ")\n")
	}
	out.WriteString("\n")
	link := func(name string) string {
		return "#" + anchor(strings.ReplaceAll(strings.TrimSuffix(name, ".md"), "_", " "))
	}
	for _, c := range cmds {
		var b bytes.Buffer
		require.NoError(t, doc.GenMarkdownCustom(c, &b, link))
		out.WriteString("\n")
		out.Write(b.Bytes())
	}
	return bytes.TrimLeft(out.Bytes(), "\n")
}

// anchor is the fragment GitHub gives a heading: lower case, spaces as hyphens.
func anchor(heading string) string { return strings.ReplaceAll(strings.ToLower(heading), " ", "-") }
