package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
	policy := file("policy.yaml", "  backupName: b\n  resourcePolicy: {kind: configmap, name: volume-policy}\n")
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
		"a field not supported":         {[]string{"plan", "--from-velero-restore", policy, "--embedded"}, "spec.resourcePolicy: volume policies are not supported"},
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
