package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/workload"
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

	// A restore order whose kinds wait for each other is refused, naming the cycle.
	cyclic := filepath.Join(t.TempDir(), "order.yaml")
	os.WriteFile(cyclic, []byte("groupKindDependencies:\n- satisfying: {resourceKind: Secret}\n  requiring: {resourceKind: Pod}\n"+
		"- satisfying: {resourceKind: Pod}\n  requiring: {resourceKind: Secret}\n"), 0o644)
	r = rg(t, "plan", "--backup", backup, "--embedded", "--restore-order", cyclic)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "invalid restore order: "+cyclic+": the kinds wait for each other: Secret → Pod → Secret")
	r = rg(t, "plan", "--backup", backup, "--embedded", "--restore-order", "/nonexistent")
	assert.Equal(t, 2, r.code, r.stderr)
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
