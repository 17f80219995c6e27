package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/restoregraph/restoregraph/manifest"
)

// TestPlanAndRestoreAgree: with the same flags, the dry run and the restore it previews
// name the same objects at the same versions in the same places.
func TestPlanAndRestoreAgree(t *testing.T) {
	prio := filepath.Join(t.TempDir(), "prio")
	require.NoError(t, os.WriteFile(prio, []byte("horizontalpodautoscalers.autoscaling=v1\n"), 0o644))
	for _, flags := range [][]string{
		{},
		{"--include-resources", "deploy,rs,po,cm,hpa,ns", "--selector", "app!=db", "--namespace-mappings", "shop:shop-copy", "--version-priorities", prio},
		{"--exclude-resources", "secrets,Job", "--include-namespaces", "shop", "--restore-name", "nightly-copy"},
	} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			p := rg(t, append([]string{"plan", "--backup", shopBackup, "--embedded", "-o", "json"}, flags...)...)
			require.Equal(t, 0, p.code, p.stderr)
			r := rg(t, append([]string{"restore", "--backup", shopBackup, "--embedded", "-o", "json"}, flags...)...)
			require.Equal(t, 0, r.code, r.stderr)
			want, got := planned(t, p.stdout), restoredObjects(t, r.stdout)
			assert.NotEmpty(t, want)
			assert.Equal(t, want, got)
		})
	}
	p := rg(t, "plan", "--backup", shopBackup, "--embedded", "-o", "json", "--version-priorities", prio)
	var plan struct {
		Versions []struct{ Group, Resource, Version, Rule string }
	}
	require.NoError(t, json.Unmarshal([]byte(p.stdout), &plan))
	found := false
	for _, v := range plan.Versions {
		if v.Resource == "horizontalpodautoscalers" {
			found = true
			assert.Equal(t, "v1", v.Version, "the user's priority")
			assert.Equal(t, "UserPriority", v.Rule)
		}
	}
	assert.True(t, found)
}

func TestManifest(t *testing.T) {
	backup := capiTarball(t, 1)
	out := filepath.Join(t.TempDir(), "manifest.json.gz")
	r := rg(t, "manifest", "--backup", backup, "-o", out)
	require.Equal(t, 0, r.code, r.stderr)
	m, err := manifest.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, items(t, backup), m.Len())
}

const shopBackup = "../../testdata/backups/shop-k8s-1.37.tar.gz"

// TestRestoreRealBackup restores what a real API server and its controllers wrote.
func TestRestoreRealBackup(t *testing.T) {
	r := rg(t, "restore", "--backup", shopBackup, "--embedded")
	assert.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, "7 objects left to the target by restoregraph.dev/non-restorable")
	assert.Contains(t, r.stdout, "7 objects left to the target by restoregraph.dev/controller-managed")
	assert.Contains(t, r.stdout, "40 objects in")

	r = rg(t, "restore", "--backup", shopBackup, "--embedded", "--disable-plugin", "restoregraph.dev/job")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "Failed    Job shop/migrate")

	r = rg(t, "restore", "--backup", shopBackup, "--embedded", "--wait", "--wait-timeout", "300ms")
	assert.Equal(t, 1, r.code, "nothing runs the Pods in the embedded server")
	assert.Contains(t, r.stdout, "not healthy: Deployment shop/web")
	assert.Contains(t, r.stderr, "not healthy after 300ms")

	r = rg(t, "plan", "--backup", shopBackup, "--embedded")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "(also listed as events: restored once) [not restored: events.events.k8s.io is not restored")
}

func TestClientRateLimitFlags(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	r := rg(t, "plan", "--backup", shopBackup, "--kubeconfig", kubeconfig, "--client-qps", "0")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--client-qps and --client-burst must be positive")
}

// veleroPlugins builds, once, the plugins of test/velero, written with Velero's own
// plugin framework.
var veleroPlugins = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "restoregraph-cli-plugins")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "testplugins")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/testplugins")
	cmd.Dir = "../../test/velero"
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v: %s", err, out)
	}
	return bin, nil
})

// TestRestoreWithVeleroPlugins runs Velero plugin executables from the command line.
func TestRestoreWithVeleroPlugins(t *testing.T) {
	bin, err := veleroPlugins()
	require.NoError(t, err)
	dir := filepath.Dir(bin)

	p := rg(t, "plan", "--backup", shopBackup, "--embedded", "--plugins", dir, "-o", "json")
	require.Equal(t, 0, p.code, p.stderr)
	var plan struct {
		Plugins []struct{ Name, Version string }
	}
	require.NoError(t, json.Unmarshal([]byte(p.stdout), &plan))
	versions := map[string]string{}
	for _, pl := range plan.Plugins {
		versions[pl.Name] = pl.Version
	}
	assert.Equal(t, "v2", versions["example.io/needs-settings"])
	assert.Equal(t, "v1", versions["example.io/relabel"])
	assert.Equal(t, "v1", versions["restoregraph.dev/service"], "the built-in ones first")

	r := rg(t, "restore", "--backup", shopBackup, "--embedded", "--plugin", bin, "--disable-plugin", "example.io/crash-once", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var rep struct {
		Objects []struct {
			Name, Kind, Status string
			Waited             int64
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	var creds, settings int64 = -1, -1
	for _, o := range rep.Objects {
		switch o.Kind + "/" + o.Name {
		case "Secret/creds":
			creds = o.Waited
		case "ConfigMap/settings":
			settings = o.Waited
			assert.Equal(t, "Restored", o.Status)
		}
	}
	assert.Positive(t, creds, "the v2 plugin's wait for its additional item crossed the process boundary")
	assert.Zero(t, settings)
	out, _ := exec.Command("pgrep", "-f", bin).Output()
	assert.Empty(t, strings.TrimSpace(string(out)), "no plugin process outlives the command")
}
