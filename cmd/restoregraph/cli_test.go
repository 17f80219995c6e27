package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/manifest"
)

var binary string

// TestMain builds the command once; every test runs it as a user would.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "restoregraph-cli")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "restoregraph")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

func rg(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{code, out.String(), errb.String()}
}

func capiTarball(t *testing.T, clusters int) string {
	path := filepath.Join(t.TempDir(), "backup.tar.gz")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, workload.CAPI(workload.CAPIOptions{Clusters: clusters, Seed: 3}).Write(f))
	require.NoError(t, f.Close())
	return path
}

// items returns the number of objects in a backup tarball.
func items(t *testing.T, path string) int {
	b, err := archive.ReadFile(context.Background(), path, archive.Options{})
	require.NoError(t, err)
	return b.Manifest().Len()
}

func TestPlanJSON(t *testing.T) {
	backup := capiTarball(t, 1)
	r := rg(t, "plan", "--backup", backup, "--embedded", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var plan struct {
		Versions []map[string]any `json:"versions"`
		Objects  []struct {
			UID, Group, Resource, Namespace, Name, Version string
			DependsOn                                      []struct{ UID, Reason string } `json:"dependsOn"`
		} `json:"objects"`
		Cycles   []any    `json:"cycles"`
		Warnings []string `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &plan))
	require.NotEmpty(t, plan.Versions)
	for _, field := range []string{"group", "resource", "version", "rule", "sourceVersions", "targetVersions"} {
		assert.Contains(t, plan.Versions[0], field)
	}
	assert.Len(t, plan.Objects, items(t, backup))
	deps := 0
	for _, o := range plan.Objects {
		assert.NotEmpty(t, o.UID)
		assert.NotEmpty(t, o.Version)
		for _, d := range o.DependsOn {
			assert.NotEmpty(t, d.Reason)
			deps++
		}
	}
	assert.Positive(t, deps)
	assert.NotNil(t, plan.Cycles)

	r = rg(t, "plan", "--backup", backup, "--embedded", "-o", "dot")
	require.Equal(t, 0, r.code, r.stderr)
	assert.True(t, strings.HasPrefix(r.stdout, "strict digraph restore {") || strings.HasPrefix(r.stdout, "digraph restore {"), r.stdout[:40])

	r = rg(t, "plan", "--backup", backup, "--embedded")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Critical path:")
}

func TestRestoreJSON(t *testing.T) {
	backup := capiTarball(t, 1)
	journal := filepath.Join(t.TempDir(), "journal")
	r := rg(t, "restore", "--backup", backup, "--embedded", "-o", "json", "--journal", journal, "--workers", "4")
	require.Equal(t, 0, r.code, r.stderr)
	var rep struct {
		Objects []map[string]any `json:"objects"`
		Summary map[string]int   `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	n := items(t, backup)
	assert.Equal(t, map[string]int{"Restored": n}, rep.Summary)
	for _, field := range []string{"uid", "newUID", "group", "resource", "name", "version", "status"} {
		assert.Contains(t, rep.Objects[0], field)
	}
	assert.Contains(t, r.stderr, fmt.Sprintf("%d/%d done", n, n), "progress, as plain lines when not on a terminal")
	data, err := os.ReadFile(journal)
	require.NoError(t, err)
	assert.Equal(t, n, strings.Count(string(data), "\n"), "one journal line per object")
}

// TestRestoreIncomplete: a resource nobody serves fails, so the exit code is 1.
func TestRestoreIncomplete(t *testing.T) {
	path := filepath.Join(t.TempDir(), "backup.tar.gz")
	f, _ := os.Create(path)
	w, _ := archive.NewWriter(f, archive.Format11)
	for _, o := range []map[string]any{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "ns"}},
		{"apiVersion": "y.io/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g", "namespace": "shop", "uid": "g"}},
	} {
		u := &unstructured.Unstructured{Object: o}
		resource := "namespaces"
		if u.GetKind() == "Gadget" {
			resource = "gadgets"
		}
		require.NoError(t, w.Add(u, resource, true))
	}
	require.NoError(t, w.Close())
	f.Close()
	r := rg(t, "restore", "--backup", path, "--embedded")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "Failed    Gadget shop/g")
	assert.Contains(t, r.stdout, "does not serve gadgets.y.io")
}

func TestBadInput(t *testing.T) {
	backup := capiTarball(t, 1)
	notATarball := filepath.Join(t.TempDir(), "junk.tar.gz")
	os.WriteFile(notATarball, []byte("junk"), 0o644)
	badPrio := filepath.Join(t.TempDir(), "prio")
	os.WriteFile(badPrio, []byte("pods=v1\nnonsense\n"), 0o644)
	for name, args := range map[string][]string{
		"unknown flag":            {"restore", "--bogus"},
		"no backup":               {"restore", "--embedded"},
		"missing file":            {"plan", "--backup", "/nonexistent", "--embedded"},
		"not a tarball":           {"restore", "--backup", notATarball, "--embedded"},
		"bad policy":              {"restore", "--backup", backup, "--embedded", "--existing", "maybe"},
		"bad output":              {"plan", "--backup", backup, "--embedded", "-o", "yaml"},
		"no priorities file":      {"restore", "--backup", backup, "--embedded", "--version-priorities", "/nonexistent"},
		"no cluster configured":   {"plan", "--backup", backup},
		"unknown resource":        {"restore", "--backup", backup, "--embedded", "--include-resources", "gizmos"},
		"bad mapping":             {"plan", "--backup", backup, "--embedded", "--namespace-mappings", "a=b"},
		"bad selector":            {"plan", "--backup", backup, "--embedded", "--selector", "a in (b"},
		"bad configmap":           {"plan", "--backup", backup, "--embedded", "--version-priorities-configmap", "nonamespace"},
		"bad cluster resources":   {"plan", "--backup", backup, "--embedded", "--include-cluster-resources=maybe"},
		"controller, no plugins":  {"controller", "--embedded"},
		"controller, no restores": {"controller", "--embedded", "--plugins", "/p", "--restores", "0"},
		"controller, short lease": {"controller", "--embedded", "--plugins", "/p", "--lease-duration", "1s"},
	} {
		t.Run(name, func(t *testing.T) {
			r := rg(t, args...)
			assert.Equal(t, 2, r.code, "stderr: %s", r.stderr)
			assert.NotEmpty(t, r.stderr)
		})
	}
	r := rg(t, "restore", "--backup", "x", "--embedded", "--version-priorities", badPrio)
	assert.Equal(t, 2, r.code)

	// A bad line of priorities is skipped with a warning naming it, as Velero does.
	r = rg(t, "restore", "--backup", backup, "--embedded", "--version-priorities", badPrio)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, `warning: version priorities line 2 "nonsense"`)
}

// planned is what plan -o json says the restore will make, and restored what restore
// -o json says it made: uid -> version, target namespace and name.
func planned(t *testing.T, stdout string) map[string]string {
	var p struct {
		Objects []struct {
			UID, Version, Namespace, Name, TargetNamespace, TargetName, Excluded string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &p))
	out := map[string]string{}
	for _, o := range p.Objects {
		if o.Excluded == "" {
			out[o.UID] = o.Version + " " + o.TargetNamespace + "/" + o.TargetName
		}
	}
	return out
}

func restoredObjects(t *testing.T, stdout string) map[string]string {
	var rep struct {
		Objects []struct {
			UID, Version, Status, TargetNamespace, TargetName string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	out := map[string]string{}
	for _, o := range rep.Objects {
		if o.Status == "Restored" || o.Status == "Adopted" {
			out[o.UID] = o.Version + " " + o.TargetNamespace + "/" + o.TargetName
		}
	}
	return out
}

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

func TestDemo(t *testing.T) {
	out := t.TempDir()
	r := rg(t, "demo", "capi", "--clusters", "1", "--out", out, "--latency", "1ms")
	require.Equal(t, 0, r.code, r.stderr)
	n := items(t, filepath.Join(out, "backup.tar.gz"))
	assert.Contains(t, r.stdout, fmt.Sprintf("%d restored, 0 failed, 0 skipped", n))
	assert.Contains(t, r.stdout, "objects deleted by the garbage collector afterwards: 0")
	kept := regexp.MustCompile(`ownership links kept, pointing at the new owners: (\d+) of (\d+)\n`).FindStringSubmatch(r.stdout)
	require.Len(t, kept, 3, r.stdout)
	assert.Equal(t, kept[2], kept[1], "restoregraph keeps every link")
	assert.NotEqual(t, "0", kept[2])
	assert.Contains(t, r.stdout, fmt.Sprintf("ownerReferences removed as Velero removes them):\n  %d objects", n))
	assert.Regexp(t, `ownership links kept: 0 of [1-9]`, r.stdout, "the model of Velero keeps none")
	for _, f := range []string{"backup.tar.gz", "plan.json", "plan.dot", "report.json", "timeline.svg"} {
		info, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
		assert.Positive(t, info.Size(), f)
	}
	svg, _ := os.ReadFile(filepath.Join(out, "timeline.svg"))
	assert.True(t, bytes.Contains(svg, []byte(fmt.Sprintf("Restore timeline: %d objects", n))), "the timeline names its objects")
	assert.Equal(t, n, bytes.Count(svg, []byte(`fill="#3b7dd8"><title>`)), "one creating bar per object")
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

// A backup is named once, and one named through Velero comes with what reading it
// needs: the plugins that reach its location, and the cluster where Velero runs.
func TestFromBackupFlags(t *testing.T) {
	backup := capiTarball(t, 1)
	for name, c := range map[string]struct {
		args []string
		says string
	}{
		"none":                  {[]string{"plan", "--embedded"}, "name the backup: --backup FILE|URL, --from-backup NAME or --from-schedule NAME"},
		"two":                   {[]string{"plan", "--backup", backup, "--from-backup", "nightly", "--embedded"}, "give one"},
		"no plugins":            {[]string{"restore", "--from-backup", "nightly", "--embedded"}, "give the directory of Velero's plugins with --plugins"},
		"embedded, no source":   {[]string{"verify", "--from-schedule", "daily", "--plugins", t.TempDir(), "--embedded"}, "give --source-kubeconfig"},
		"endpoint with a name":  {[]string{"plan", "--from-backup", "nightly", "--s3-endpoint", "http://127.0.0.1:1", "--embedded"}, "--s3-endpoint is for an s3:// --backup"},
		"no plugin in the dir":  {[]string{"plan", "--from-backup", "nightly", "--plugins", t.TempDir(), "--source-kubeconfig", "kc", "--embedded"}, "holds no executable"},
		"source with a tarball": {[]string{"plan", "--backup", backup, "--source-kubeconfig", "kc", "--embedded"}, "--source-kubeconfig is where Velero runs"},
	} {
		t.Run(name, func(t *testing.T) {
			r := rg(t, c.args...)
			assert.Equal(t, 2, r.code, "stderr: %s", r.stderr)
			assert.Contains(t, r.stderr, c.says)
		})
	}
}

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

// TestResourceModifiersFlags: --resource-modifiers in plan, restore and verify, and its
// bad input refused with the field named.
func TestResourceModifiersFlags(t *testing.T) {
	dir := t.TempDir()
	mods := filepath.Join(dir, "modifiers.yaml")
	require.NoError(t, os.WriteFile(mods, []byte(`
version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps, namespaces: [shop]}
  patches: [{operation: replace, path: /spec/replicas, value: "1"}]
- conditions: {groupResource: persistentvolumeclaims, matches: [{path: /spec/accessModes/0, value: ReadWriteOnce}]}
  mergePatches: [{patchData: "spec: {storageClassName: fast}"}]
`), 0o644))
	r := rg(t, "plan", "--backup", shopBackup, "--embedded", "--resource-modifiers", mods)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `Deployment shop/web <- .* \[modified by rule 0\]`, r.stdout)
	assert.Contains(t, r.stdout, "PersistentVolumeClaim shop/data-db-0 <- Namespace shop (namespace) [modified by rule 1 if its matches hold]")

	r = rg(t, "restore", "--backup", shopBackup, "--embedded", "--resource-modifiers", mods, "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var rep struct {
		Objects []struct {
			Name      string `json:"name"`
			Modifiers []int  `json:"modifiers"`
		} `json:"objects"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	modified := map[string][]int{}
	for _, o := range rep.Objects {
		if len(o.Modifiers) > 0 {
			modified[o.Name] = o.Modifiers
		}
	}
	assert.Equal(t, map[string][]int{"web": {0}, "data-db-0": {1}}, modified, "the report says which rules changed which objects")

	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("version: v1\nresourceModifierRules:\n- conditions: {groupResource: pods}\n  patches: [{operation: replace, value: x}]\n"), 0o644))
	r = rg(t, "plan", "--backup", shopBackup, "--embedded", "--resource-modifiers", bad)
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "resourceModifierRules[0].patches[0].path: empty")
	r = rg(t, "plan", "--backup", shopBackup, "--embedded", "--resource-modifiers", mods, "--resource-modifier-configmap", "mods")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "give one")
	r = rg(t, "plan", "--backup", shopBackup, "--embedded", "--resource-modifier-configmap", "mods")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "no ConfigMap velero/mods in the target")
}

// Velero's names and options of restore create: --or-selector, --existing-resource-policy,
// --status-include-resources; --allow-partially-failed and --from-velero-restore refuse
// what they cannot go with, naming it.
func TestVeleroRestoreFlags(t *testing.T) {
	r := rg(t, "plan", "--backup", shopBackup, "--embedded", "--include-resources", "pods", "--or-selector", "app=db or app=debug", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var plan struct {
		Objects []struct{ Resource, Name, Excluded string }
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &plan))
	var pods []string
	for _, o := range plan.Objects {
		if o.Resource == "pods" && o.Excluded == "" {
			pods = append(pods, o.Name)
		}
	}
	assert.ElementsMatch(t, []string{"db-0", "debug"}, pods)

	r = rg(t, "restore", "--backup", shopBackup, "--embedded", "--existing-resource-policy", "update", "--status-include-resources", "*")
	assert.Equal(t, 0, r.code, r.stderr)

	dir := t.TempDir()
	file := func(name, spec string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte("apiVersion: velero.io/v1\nkind: Restore\nmetadata: {name: r, namespace: velero}\nspec:\n"+spec), 0o644))
		return path
	}
	pvs := file("pvs.yaml", "  backupName: b\n  restorePVs: true\n")
	ok := file("ok.yaml", "  backupName: b\n")
	for name, c := range map[string]struct {
		args []string
		says string
	}{
		"both selectors":                {[]string{"plan", "--backup", shopBackup, "--embedded", "--selector", "a=b", "--or-selector", "c=d"}, "--selector and --or-selector"},
		"bad or-selector":               {[]string{"plan", "--backup", shopBackup, "--embedded", "--or-selector", "a=b or ==c"}, `or-selector "==c"`},
		"policy twice":                  {[]string{"plan", "--backup", shopBackup, "--embedded", "--existing", "fail", "--existing-resource-policy", "update"}, "give one"},
		"not Velero's policy":           {[]string{"plan", "--backup", shopBackup, "--embedded", "--existing-resource-policy", "fail"}, "none or update, as Velero's"},
		"unknown status resource":       {[]string{"plan", "--backup", shopBackup, "--embedded", "--status-include-resources", "gizmos"}, `no resource is named "gizmos"`},
		"partially failed, no schedule": {[]string{"plan", "--backup", shopBackup, "--embedded", "--allow-partially-failed"}, "--allow-partially-failed goes with --from-schedule"},
		"a field not supported":         {[]string{"plan", "--from-velero-restore", pvs, "--embedded"}, "spec.restorePVs: true: volume data is not restored"},
		"selection flags beside":        {[]string{"plan", "--from-velero-restore", ok, "--include-namespaces", "a", "--backup", shopBackup, "--embedded"}, "--backup, --include-namespaces cannot be given with it"},
		"no such file":                  {[]string{"plan", "--from-velero-restore", filepath.Join(dir, "none.yaml"), "--embedded"}, "no such file"},
		"another velero namespace":      {[]string{"plan", "--from-velero-restore", ok, "--velero-namespace", "backups", "--embedded"}, "is in namespace velero, --velero-namespace says backups"},
	} {
		t.Run(name, func(t *testing.T) {
			r := rg(t, c.args...)
			assert.Equal(t, 2, r.code, "stderr: %s", r.stderr)
			assert.Contains(t, r.stderr, c.says)
		})
	}
}

// --cpu-profile and --heap-profile write pprof's files (gzipped protobuf) at the run's
// end, whatever its exit code, and --trace an execution trace; a path that cannot be
// written is bad input naming the flag.
func TestProfiles(t *testing.T) {
	backup := capiTarball(t, 1)
	dir := t.TempDir()
	cpu, heap, trace := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "heap.prof"), filepath.Join(dir, "trace.out")
	r := rg(t, "restore", "--backup", backup, "--embedded", "--admission", "local", "--cpu-profile", cpu, "--heap-profile", heap, "--trace", trace)
	require.Equal(t, 0, r.code, r.stderr)
	data, err := os.ReadFile(trace)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(data, []byte("go 1.")), "%s is an execution trace: %.16q", trace, data)
	for _, p := range []string{cpu, heap} {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Greater(t, len(data), 2, p)
		assert.Equal(t, []byte{0x1f, 0x8b}, data[:2], "%s is a gzipped profile", p)
	}
	failed := filepath.Join(dir, "failed.prof")
	r = rg(t, "plan", "--backup", backup, "--embedded", "--include-resources", "nosuchthing", "--cpu-profile", failed)
	require.Equal(t, 2, r.code, r.stderr)
	data, err = os.ReadFile(failed)
	require.NoError(t, err, "a run that fails writes its profile too")
	assert.Equal(t, []byte{0x1f, 0x8b}, data[:2])
	r = rg(t, "plan", "--backup", backup, "--embedded", "--cpu-profile", filepath.Join(dir, "missing", "cpu.prof"))
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--cpu-profile: open "+filepath.Join(dir, "missing", "cpu.prof"))
	r = rg(t, "plan", "--backup", backup, "--embedded", "--trace", filepath.Join(dir, "missing", "trace.out"))
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--trace: open "+filepath.Join(dir, "missing", "trace.out"))
}
