package test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/restore"
)

// asyncBackup writes a backup of namespace ns: claims, each copied by the copy-volume
// plugin's operation as its value says ("8s", "fail", "never"), and a Pod mounting each.
func asyncBackup(t *testing.T, ns string, claims map[string]string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "async.tar.gz")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	w, err := archive.NewWriter(f, archive.Format11)
	require.NoError(t, err)
	add := func(resource string, obj map[string]any) {
		require.NoError(t, w.Add(&unstructured.Unstructured{Object: obj}, resource, true))
	}
	add("namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns, "uid": "ns"}})
	for claim, copy := range claims {
		add("persistentvolumeclaims", map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
			"metadata": map[string]any{"name": claim, "namespace": ns, "uid": "claim-" + claim, "annotations": map[string]any{"example.io/copy": copy}},
			"spec":     map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}}})
		add("pods", map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "uses-" + claim, "namespace": ns, "uid": "pod-" + claim},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "db", "image": "postgres:17"}},
				"volumes": []any{map[string]any{"name": "data", "persistentVolumeClaim": map[string]any{"claimName": claim}}}}})
	}
	require.NoError(t, w.Close())
	return path
}

// buildTestPlugins builds the plugin executable of test/velero into dir.
func buildTestPlugins(t testing.TB, dir string) string {
	return buildVeleroCommand(t, dir, "testplugins")
}

// buildVeleroCommand builds test/velero's command name into dir.
func buildVeleroCommand(t testing.TB, dir, name string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", bin, "./cmd/"+name)
	build.Dir = "velero"
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	return bin
}

// TestAsyncOperationResumedAfterSIGKILL: restore, from the command line into the real API
// server, a claim whose data a plugin built with Velero's framework copies in an
// operation of 8 s, with a journal; SIGKILL the restore while the operation runs (its
// plugin process dies with it), and run the same command again. The second run follows
// the same operation to its end: Execute was called once, the claim comes from the
// journal with its operation Completed, and the Pod that mounts it is created after.
func TestAsyncOperationResumedAfterSIGKILL(t *testing.T) {
	dir := t.TempDir()
	plugins := buildTestPlugins(t, dir)
	bin, err := cliBinary()
	require.NoError(t, err)
	backup := asyncBackup(t, "async-killed", map[string]string{"data": "8s"})
	journal, log := filepath.Join(dir, "journal"), filepath.Join(dir, "async.log")
	args := []string{"restore", "--backup", backup, "--kubeconfig", cluster.Kubeconfig, "--plugin", plugins, "--journal", journal,
		"--disable-plugin", "example.io/crash-once", "--admission", "local", "-o", "json"}
	command := func() *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "ASYNC_LOG="+log)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return cmd
	}

	first := command()
	var stderr bytes.Buffer
	first.Stderr = &stderr
	require.NoError(t, first.Start())
	require.Eventually(t, func() bool {
		data, _ := os.ReadFile(journal)
		return strings.Contains(string(data), `"phase":"InProgress"`)
	}, 60*time.Second, 20*time.Millisecond, "the claim is journaled with its operation under way: %s", &stderr)
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	first.Wait()
	data, _ := os.ReadFile(log)
	require.Equal(t, 1, strings.Count(string(data), "execute "), "one operation started: %s", data)
	data, _ = os.ReadFile(journal)
	require.NotContains(t, string(data), `"phase":"Completed"`, "killed while the operation ran")
	resumed := time.Now()

	second := command()
	var stdout bytes.Buffer
	second.Stdout, second.Stderr = &stdout, &stderr
	require.NoError(t, second.Run(), "the second run: %s", &stderr)
	got := reportObjects(t, stdout.Bytes())
	claim := got["PersistentVolumeClaim/data"]
	assert.True(t, claim.FromJournal, "the claim comes from the journal")
	require.Len(t, claim.Operations, 1)
	op := claim.Operations[0]
	assert.Equal(t, restore.OperationCompleted, op.Phase)
	assert.GreaterOrEqual(t, op.Ended.Sub(op.Started), 8*time.Second, "the operation started by the first run")
	assert.True(t, op.Ended.After(resumed), "followed to its end by the second")
	pod := got["Pod/uses-data"]
	assert.Equal(t, restore.Restored, pod.Status)
	assert.False(t, pod.Created.Before(op.Ended), "the Pod is created once the copy is done")
	data, _ = os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	assert.Equal(t, []string{"execute " + op.ID}, lines, "Execute once in both runs, and nothing cancelled")

	_, err = restoreTarget(t, cfg()).Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("async-killed").
		Get(context.Background(), "uses-data", metav1.GetOptions{})
	require.NoError(t, err)
}

// TestAsyncOperationsFromTheCommandLine: into the real API server, through the plugin
// binary, one operation completes, one fails, one outlasts --item-operation-timeout and
// is cancelled through the plugin; exit 1, each said in the report. Then a restore
// interrupted (SIGINT) while an operation runs cancels it.
func TestAsyncOperationsFromTheCommandLine(t *testing.T) {
	dir := t.TempDir()
	plugins := buildTestPlugins(t, dir)
	bin, err := cliBinary()
	require.NoError(t, err)
	log := filepath.Join(dir, "async.log")
	run := func(backup string, extra ...string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"restore", "--backup", backup, "--kubeconfig", cluster.Kubeconfig, "--plugin", plugins,
			"--disable-plugin", "example.io/crash-once", "--admission", "local", "-o", "json"}, extra...)...)
		cmd.Env = append(os.Environ(), "ASYNC_LOG="+log)
		return cmd
	}
	cmd := run(asyncBackup(t, "async-cli", map[string]string{"quick": "1s", "broken": "fail", "stuck": "never"}), "--item-operation-timeout", "3s")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, stderr.String())
	assert.Equal(t, 1, ee.ExitCode())
	got := reportObjects(t, stdout.Bytes())
	for claim, want := range map[string]struct {
		status restore.Status
		phase  restore.OperationPhase
		says   string
	}{
		"quick":  {restore.Restored, restore.OperationCompleted, ""},
		"broken": {restore.Failed, restore.OperationFailed, "the source snapshot is gone"},
		"stuck":  {restore.Failed, restore.OperationCanceled, "outlasted the item operation timeout"},
	} {
		o := got["PersistentVolumeClaim/"+claim]
		assert.Equal(t, want.status, o.Status, "%s: %s", claim, o.Reason)
		require.Len(t, o.Operations, 1, claim)
		assert.Equal(t, want.phase, o.Operations[0].Phase, claim)
		assert.Contains(t, o.Reason, want.says, claim)
	}
	assert.Equal(t, restore.Restored, got["Pod/uses-quick"].Status)
	data, _ := os.ReadFile(log)
	assert.Equal(t, 3, strings.Count(string(data), "execute "), "%s", data)
	assert.Equal(t, 1, strings.Count(string(data), "cancel copy/async-cli/stuck/"), "%s", data)

	require.NoError(t, os.Remove(log))
	cmd = run(asyncBackup(t, "async-interrupted", map[string]string{"stuck": "never"}))
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool {
		data, _ := os.ReadFile(log)
		return strings.Contains(string(data), "execute ")
	}, 60*time.Second, 20*time.Millisecond, "%s", &stderr)
	time.Sleep(500 * time.Millisecond) // Execute has returned to the restore
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	_ = cmd.Wait()
	data, _ = os.ReadFile(log)
	assert.Contains(t, string(data), "cancel copy/async-interrupted/stuck/", "an interrupted restore cancels the operation under way: %s", &stderr)
}

// reportObjects reads restore -o json's objects, by kind and name.
func reportObjects(t *testing.T, stdout []byte) map[string]restore.ObjectResult {
	t.Helper()
	var rep struct {
		Objects []restore.ObjectResult `json:"objects"`
	}
	require.NoError(t, json.Unmarshal(stdout, &rep))
	got := map[string]restore.ObjectResult{}
	for _, o := range rep.Objects {
		got[o.Kind+"/"+o.Name] = o
	}
	return got
}
