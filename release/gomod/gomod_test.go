package gomod

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// repo is the repository's root, from this package's directory.
const repo = "../.."

// copyRepo copies the repository's tracked files (as they are in the working tree) to
// a new directory.
func copyRepo(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "-C", repo, "ls-files", "-z").Output()
	require.NoError(t, err)
	dst := t.TempDir()
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(repo, name))
		if os.IsNotExist(err) { // deleted in the working tree
			continue
		}
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dst, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dst, name), data, 0o644))
	}
	return dst
}

// The release commit's nested go.mod files require the repository's modules at the
// release's version and have no replace directive; a version that is not one is refused.
func TestPrepare(t *testing.T) {
	dir := copyRepo(t)
	require.Error(t, Prepare(dir, "v1.2"))
	require.Error(t, Prepare(dir, "latest"))
	require.NoError(t, Prepare(dir, "v0.1.0"))
	for sub, requires := range Released {
		data, err := os.ReadFile(filepath.Join(dir, sub, "go.mod"))
		require.NoError(t, err)
		f, err := modfile.Parse(sub, data, nil)
		require.NoError(t, err)
		assert.Empty(t, f.Replace, sub)
		got := map[string]string{}
		for _, r := range f.Require {
			got[r.Mod.Path] = r.Mod.Version
		}
		for _, path := range requires {
			assert.Equal(t, "v0.1.0", got[path], "%s requires %s", sub, path)
		}
	}
}

// go install MODULE@VERSION builds the command from a module proxy holding the release:
// the three modules at v0.1.0 as their tags would publish them (zipped as the proxy
// zips them, from a copy of the repository prepared as the release commit), the rest
// from the module proxy. It builds the command, so it runs where make release runs it
// (RESTOREGRAPH_GOINSTALL=1), not among the unit tests.
func TestGoInstallAtARelease(t *testing.T) {
	if os.Getenv("RESTOREGRAPH_GOINSTALL") == "" {
		t.Skip("builds the command: make release runs it (RESTOREGRAPH_GOINSTALL=1)")
	}
	const version = "v0.1.0"
	dir := copyRepo(t)
	require.NoError(t, Prepare(dir, version))
	proxy := t.TempDir()
	for sub, path := range map[string]string{"": Library, "velero": Library + "/velero", "cmd/restoregraph": Library + "/cmd/restoregraph"} {
		mv := module.Version{Path: path, Version: version}
		escaped, err := module.EscapePath(path)
		require.NoError(t, err)
		at := filepath.Join(proxy, escaped, "@v")
		require.NoError(t, os.MkdirAll(at, 0o755))
		var z bytes.Buffer
		require.NoError(t, zip.CreateFromDir(&z, mv, filepath.Join(dir, sub)), path)
		require.NoError(t, os.WriteFile(filepath.Join(at, version+".zip"), z.Bytes(), 0o644))
		gomod, err := os.ReadFile(filepath.Join(dir, sub, "go.mod"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(at, version+".mod"), gomod, 0o644))
		info, err := json.Marshal(map[string]any{"Version": version, "Time": time.Unix(0, 0).UTC()})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(at, version+".info"), info, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(at, "list"), []byte(version+"\n"), 0o644))
	}
	upstream, err := exec.Command("go", "env", "GOPROXY").Output()
	require.NoError(t, err)
	shared, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	bin := t.TempDir()
	install := exec.Command("go", "install", Library+"/cmd/restoregraph@"+version)
	install.Dir = t.TempDir() // outside any module
	// A module cache of its own: the shared one would keep the first v0.1.0 it was given
	// and build every later run from it. The shared cache's downloads serve the rest as
	// a proxy, ahead of the network.
	install.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=-modcacherw", "GOWORK=off", "GOMODCACHE="+t.TempDir(),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(strings.TrimSpace(string(shared)), "cache", "download"))+
			","+strings.TrimSpace(string(upstream)),
		"GONOSUMDB="+Library, "GOPRIVATE=")
	out, err := install.CombinedOutput()
	require.NoError(t, err, "%s", out)
	got, err := exec.Command(filepath.Join(bin, "restoregraph"), "--version").CombinedOutput()
	require.NoError(t, err, "%s", got)
	assert.Equal(t, "restoregraph version "+version+"\n", string(got))
}
