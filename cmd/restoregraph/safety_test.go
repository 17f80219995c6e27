package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/restoregraph/restoregraph/archive"
)

// A cluster that does not answer is not bad input: each command that reaches it exits 3,
// so that a script tells "try again" from "fix the command", and says what it could not
// reach.
func TestUnreachableCluster(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: gone, cluster: {server: "http://%s"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: gone, context: {cluster: gone, user: u}}]
current-context: gone
`, addr)), 0o600))
	backup := capiTarball(t, 1)
	for name, args := range map[string][]string{
		"plan":    {"plan", "--backup", backup},
		"restore": {"restore", "--backup", backup, "--admission", "off"},
		"verify":  {"verify", "--backup", backup},
		"backup":  {"backup", "-o", filepath.Join(t.TempDir(), "b.tar.gz"), "--admission", "off"},
	} {
		t.Run(name, func(t *testing.T) {
			r := rg(t, append(args, "--kubeconfig", kubeconfig)...)
			assert.Equal(t, 3, r.code, "stderr: %s", r.stderr)
			assert.Contains(t, r.stderr, addr)
			assert.Contains(t, r.stderr, "connection refused")
		})
	}
}

// A Secret's data never reaches what the command prints or writes: plans, reports,
// progress, errors, journals. Every output of a plan, a restore and a verify of a
// backup holding a Secret is searched for its value, encoded and decoded.
func TestSecretsStaySecret(t *testing.T) {
	b, err := archive.ReadFile(context.Background(), shopBackup, archive.Options{})
	require.NoError(t, err)
	defer b.Close()
	var values []string
	for _, it := range b.Manifest().Items() {
		if it.Resource != "secrets" {
			continue
		}
		body, err := b.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
		require.NoError(t, err)
		var s struct{ Data map[string]string }
		require.NoError(t, json.Unmarshal(body, &s))
		for _, v := range s.Data {
			plain, err := base64.StdEncoding.DecodeString(v)
			require.NoError(t, err)
			values = append(values, v, string(plain))
		}
	}
	require.NotEmpty(t, values, "the backup holds a Secret with data")

	journal := filepath.Join(t.TempDir(), "journal")
	var outputs []string
	for _, args := range [][]string{
		{"plan", "--backup", shopBackup, "--embedded"},
		{"plan", "--backup", shopBackup, "--embedded", "-o", "json"},
		{"plan", "--backup", shopBackup, "--embedded", "-o", "dot"},
		{"restore", "--backup", shopBackup, "--embedded", "--journal", journal},
		{"restore", "--backup", shopBackup, "--embedded", "-o", "json", "--include-resources", "secrets", "--existing", "fail"},
		{"verify", "--backup", shopBackup, "--embedded"},
		{"verify", "--backup", shopBackup, "--embedded", "-o", "json"},
	} {
		r := rg(t, args...)
		require.Contains(t, []int{0, 1}, r.code, "%v: %s", args, r.stderr)
		outputs = append(outputs, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(journal)
	require.NoError(t, err)
	outputs = append(outputs, string(data))
	for _, out := range outputs {
		for _, v := range values {
			assert.NotContains(t, out, v)
		}
	}
}

// A plan saved by plan -o json is restored as saved by restore --plan, without --backup
// or the selection's flags; another backup is refused with what changed, unless
// --replan; -v --log-format json logs the run as JSON records.
func TestRestoreASavedPlan(t *testing.T) {
	dir := t.TempDir()
	prio := filepath.Join(dir, "prio")
	require.NoError(t, os.WriteFile(prio, []byte("horizontalpodautoscalers.autoscaling=v1\n"), 0o644))
	p := rg(t, "plan", "--backup", shopBackup, "--embedded", "-o", "json", "--include-namespaces", "shop", "--exclude-resources", "secrets",
		"--version-priorities", prio)
	require.Equal(t, 0, p.code, p.stderr)
	saved := filepath.Join(dir, "plan.json")
	require.NoError(t, os.WriteFile(saved, []byte(p.stdout), 0o600))

	r := rg(t, "restore", "--plan", saved, "--embedded", "-o", "json", "-v", "--log-format", "json")
	require.Equal(t, 0, r.code, r.stderr)
	want := planned(t, p.stdout)
	assert.Equal(t, want, restoredObjects(t, r.stdout), "the saved plan's objects, at its versions")
	var ended map[string]any
	for _, line := range strings.Split(r.stderr, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "restore ended" {
			ended = rec
		}
	}
	require.NotNil(t, ended, "a JSON record of the run's end: %s", r.stderr)
	assert.EqualValues(t, strings.Count(p.stdout, `"excluded"`) > 0, ended["skipped"] != nil)

	r = rg(t, "restore", "--plan", saved, "--embedded", "--include-namespaces", "fleet")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--plan carries its selection: --include-namespaces cannot be given with it")
	r = rg(t, "restore", "--plan", saved, "--embedded", "--existing", "fail", "--disable-plugin", "restoregraph.dev/pod", "--workers", "2")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--plan carries its selection: --disable-plugin, --existing cannot be given with it",
		"every flag of the selection is named, and only those (--workers is how to run)")

	other := capiTarball(t, 1)
	r = rg(t, "restore", "--plan", saved, "--backup", other, "--embedded")
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "the plan no longer holds")
	assert.Contains(t, r.stderr, "the backup is not the one planned")
	assert.NotContains(t, r.stdout, "restored", "nothing was restored")

	r = rg(t, "restore", "--plan", saved, "--backup", other, "--embedded", "--replan")
	assert.Contains(t, r.stderr, "replanned: the backup is not the one planned")
	assert.Contains(t, r.stdout, "objects in", "the plan as it is now was applied")

	r = rg(t, "restore", "--backup", shopBackup, "--embedded", "--replan")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--replan goes with --plan")
}
