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

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// asyncBackup writes a backup of namespace ns: a claim whose copy (the copy-volume
// plugin's operation) takes took, and a Pod that mounts it.
func asyncBackup(t *testing.T, ns string, took time.Duration) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "async.tar.gz")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	w, err := archive.NewWriter(f, archive.Format11)
	require.NoError(t, err)
	for _, o := range []struct {
		resource string
		obj      map[string]any
	}{
		{"namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns, "uid": "ns"}}},
		{"persistentvolumeclaims", map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
			"metadata": map[string]any{"name": "data", "namespace": ns, "uid": "claim", "annotations": map[string]any{"example.io/copy": took.String()}},
			"spec":     map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}}}},
		{"pods", map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "db", "namespace": ns, "uid": "pod"},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "db", "image": "postgres:17"}},
				"volumes": []any{map[string]any{"name": "data", "persistentVolumeClaim": map[string]any{"claimName": "data"}}}}}},
	} {
		require.NoError(t, w.Add(&unstructured.Unstructured{Object: o.obj}, o.resource, true))
	}
	require.NoError(t, w.Close())
	return path
}

// TestAsyncOperationResumedAfterSIGKILL: restore, from the command line into the real API
// server, a claim whose data a plugin built with Velero's framework copies in an
// operation of 8 s, with a journal; SIGKILL the restore while the operation runs (its
// plugin process dies with it), and run the same command again. The second run follows
// the same operation to its end: Execute was called once, the claim comes from the
// journal with its operation Completed, and the Pod that mounts it is created after.
func TestAsyncOperationResumedAfterSIGKILL(t *testing.T) {
	dir := t.TempDir()
	plugins := filepath.Join(dir, "testplugins")
	build := exec.Command("go", "build", "-o", plugins, "./cmd/testplugins")
	build.Dir = "velero"
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	bin, err := cliBinary()
	require.NoError(t, err)
	backup := asyncBackup(t, "async-killed", 8*time.Second)
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
	var rep struct {
		Objects []restore.ObjectResult `json:"objects"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	got := map[string]restore.ObjectResult{}
	for _, o := range rep.Objects {
		got[o.Kind] = o
	}
	claim := got["PersistentVolumeClaim"]
	assert.True(t, claim.FromJournal, "the claim comes from the journal")
	require.Len(t, claim.Operations, 1)
	op := claim.Operations[0]
	assert.Equal(t, restore.OperationCompleted, op.Phase)
	assert.GreaterOrEqual(t, op.Ended.Sub(op.Started), 8*time.Second, "the operation started by the first run")
	assert.True(t, op.Ended.After(resumed), "followed to its end by the second")
	pod := got["Pod"]
	assert.Equal(t, restore.Restored, pod.Status)
	assert.False(t, pod.Created.Before(op.Ended), "the Pod is created once the copy is done")
	data, _ = os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	assert.Equal(t, []string{"execute " + op.ID}, lines, "Execute once in both runs, and nothing cancelled")

	_, err = restoreTarget(t, cfg()).Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("async-killed").
		Get(context.Background(), "db", metav1.GetOptions{})
	require.NoError(t, err)
}
