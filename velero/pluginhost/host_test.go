package pluginhost

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero/internal/testbin"
)

// running counts the processes of an executable.
func running(t *testing.T, bin string) int {
	out, _ := exec.Command("pgrep", "-f", bin).Output()
	return len(strings.Fields(string(out)))
}

// registry discovers the plugins of bin in h and registers them, but those disabled.
func registry(t *testing.T, ctx context.Context, h *Host, bin string, disabled ...string) *plugin.Registry {
	t.Helper()
	plugins, err := h.Discover(ctx, []string{bin})
	require.NoError(t, err)
	var reg plugin.Registry
	require.NoError(t, h.Register(&reg, plugins, disabled...))
	return &reg
}

func TestDiscover(t *testing.T) {
	bin := testbin.Plugins(t)
	h := &Host{}
	defer h.Close()
	plugins, err := h.Discover(context.Background(), []string{bin})
	require.NoError(t, err)
	kinds := map[string]string{}
	for _, p := range plugins {
		kinds[p.Name] = p.Kind
	}
	assert.Equal(t, map[string]string{
		"example.io/relabel": KindRestoreItemAction, "example.io/needs-settings": KindRestoreItemActionV2,
		"example.io/skip-secrets": KindRestoreItemAction, "example.io/fail-on-flags": KindRestoreItemAction,
		"example.io/crash-once": KindRestoreItemAction, "example.io/annotate-all": KindRestoreItemAction,
		"example.io/hang-on-hang": KindRestoreItemAction, "example.io/garbage": KindRestoreItemAction,
		"example.io/copy-volume": KindRestoreItemActionV2,
	}, kinds)
	for _, p := range plugins {
		if p.Name == "example.io/needs-settings" {
			assert.Equal(t, []string{"secrets"}, p.AppliesTo.IncludedResources)
		}
	}
	h.Close()
	assert.Zero(t, running(t, bin), "no plugin process outlives the host")
}

func backupOf(t *testing.T, objects ...map[string]any) *archive.Backup {
	var buf bytes.Buffer
	w, err := archive.NewWriter(&buf, archive.Format11)
	require.NoError(t, err)
	for _, o := range objects {
		u := &unstructured.Unstructured{Object: o}
		resource := strings.ToLower(u.GetKind()) + "s"
		if u.GetKind() == "Namespace" {
			resource = "namespaces"
		}
		require.NoError(t, w.Add(u, resource, true))
	}
	require.NoError(t, w.Close())
	b, err := archive.Read(context.Background(), &buf, archive.Options{})
	require.NoError(t, err)
	return b
}

func obj(kind, name string) map[string]any {
	o := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": name, "namespace": "shop", "uid": kind + "-" + name}}
	if kind == "Namespace" {
		o["metadata"] = map[string]any{"name": name, "uid": "ns-" + name}
	}
	return o
}

func target(t *testing.T) restore.Target {
	s, err := memcluster.StartServer(memcluster.Options{})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	tgt, err := restore.NewTarget(s.Config())
	require.NoError(t, err)
	return tgt
}

func byName(rep *restore.Report) map[string]restore.ObjectResult {
	out := map[string]restore.ObjectResult{}
	for o := range rep.Objects() {
		out[o.Kind+"/"+o.Name] = o
	}
	return out
}

// TestRestoreThroughVeleroPlugins: a v1 plugin that relabels, a v2 plugin with
// additional items it waits for, one that skips, one that fails: each crosses the
// process boundary as it would in process.
func TestRestoreThroughVeleroPlugins(t *testing.T) {
	bin := testbin.Plugins(t)
	h := &Host{}
	defer h.Close()
	ctx := context.Background()
	reg := registry(t, ctx, h, bin, "example.io/crash-once")

	b := backupOf(t, obj("Namespace", "shop"), obj("ConfigMap", "settings"), obj("ConfigMap", "flags"),
		obj("Secret", "creds"), obj("Secret", "skip-me"))
	tgt := target(t)
	rep, err := restore.Run(ctx, b, tgt, restore.PlanOptions{Extensions: restore.Extensions{Plugins: reg}}, restore.RunOptions{})
	require.NoError(t, err)
	res := byName(rep)

	settings, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("shop").Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "velero-plugin", settings.GetLabels()["restored-by"], "the v1 plugin's change")

	creds := res["Secret/creds"]
	assert.Equal(t, restore.Restored, creds.Status)
	assert.Empty(t, creds.Warnings, "the v2 plugin said its additional item was ready")
	assert.False(t, creds.Created.Before(res["ConfigMap/settings"].Ready), "the additional item first")
	assert.Positive(t, creds.Waited)

	assert.Equal(t, restore.Skipped, res["Secret/skip-me"].Status)
	assert.Equal(t, "example.io/skip-secrets", res["Secret/skip-me"].SkippedBy)

	assert.Equal(t, restore.Failed, res["ConfigMap/flags"].Status)
	assert.Contains(t, res["ConfigMap/flags"].Reason, "plugin example.io/fail-on-flags")
	assert.Contains(t, res["ConfigMap/flags"].Reason, "flags are not to be restored by this plugin")

	h.Close()
	assert.Zero(t, running(t, bin))
}

// TestCrashedPluginIsRestarted: the plugin's process dies in a call; that object fails
// saying so, and the next call starts the process again.
func TestCrashedPluginIsRestarted(t *testing.T) {
	bin := testbin.Plugins(t)
	h := &Host{Env: []string{"CRASH_MARKER_DIR=" + t.TempDir()}}
	defer h.Close()
	ctx := context.Background()
	reg := registry(t, ctx, h, bin, "example.io/relabel", "example.io/needs-settings", "example.io/skip-secrets", "example.io/fail-on-flags")

	b := backupOf(t, obj("Namespace", "shop"), obj("ConfigMap", "a-before"), obj("ConfigMap", "crash"), obj("ConfigMap", "z-after"))
	rep, err := restore.Run(ctx, b, target(t), restore.PlanOptions{Extensions: restore.Extensions{Plugins: reg}}, restore.RunOptions{Workers: 1})
	require.NoError(t, err)
	res := byName(rep)
	assert.Equal(t, restore.Failed, res["ConfigMap/crash"].Status)
	assert.Contains(t, res["ConfigMap/crash"].Reason, "exited during the call")
	assert.Equal(t, restore.Restored, res["ConfigMap/a-before"].Status)
	assert.Equal(t, restore.Restored, res["ConfigMap/z-after"].Status, "the process was started again")
	h.Close()
	assert.Zero(t, running(t, bin))
}

// TestHungOrGarbledPlugin: a plugin that never answers for one object, and one that
// answers with what is no object. Each fails its object, naming the plugin; the rest is
// restored. The hung process is replaced for the calls after it and killed once nothing
// waits on it, so that no process is left behind.
func TestHungOrGarbledPlugin(t *testing.T) {
	bin := testbin.Plugins(t)
	h := &Host{}
	defer h.Close()
	ctx := context.Background()
	reg := registry(t, ctx, h, bin, "example.io/needs-settings", "example.io/skip-secrets",
		"example.io/fail-on-flags", "example.io/crash-once", "example.io/annotate-all")

	tgt := target(t)
	b := backupOf(t, obj("Namespace", "shop"), obj("ConfigMap", "a-before"), obj("ConfigMap", "hang"),
		obj("ConfigMap", "garbage"), obj("ConfigMap", "z-after"))
	rep, err := restore.Run(ctx, b, tgt, restore.PlanOptions{Extensions: restore.Extensions{Plugins: reg}}, restore.RunOptions{Workers: 2, ItemTimeout: 2 * time.Second})
	require.NoError(t, err)
	res := byName(rep)
	assert.Equal(t, restore.Failed, res["ConfigMap/hang"].Status)
	assert.Contains(t, res["ConfigMap/hang"].Reason, "plugin example.io/hang-on-hang")
	assert.Contains(t, res["ConfigMap/hang"].Reason, "did not answer in time")
	assert.Equal(t, restore.Failed, res["ConfigMap/garbage"].Status)
	assert.Contains(t, res["ConfigMap/garbage"].Reason, "plugin example.io/garbage: the updated item")
	for _, name := range []string{"ConfigMap/a-before", "ConfigMap/z-after"} {
		assert.Equal(t, restore.Restored, res[name].Status, name)
	}

	// The next call goes to a new process, and the hung one is gone.
	rep, err = restore.Run(ctx, backupOf(t, obj("Namespace", "shop"), obj("ConfigMap", "after-hang")), tgt, restore.PlanOptions{Extensions: restore.Extensions{Plugins: reg}}, restore.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, restore.Restored, byName(rep)["ConfigMap/after-hang"].Status)
	cm, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("shop").Get(ctx, "after-hang", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "velero-plugin", cm.GetLabels()["restored-by"], "the plugins ran in the new process")
	p := h.process(bin, nil)
	p.mu.Lock()
	assert.Equal(t, 2, p.starts, "started again once, after the hang")
	p.mu.Unlock()
	assert.Equal(t, 1, running(t, bin), "the hung process was killed")
	h.Close()
	assert.Zero(t, running(t, bin))
}

// TestCancelledRestoreEndsPluginProcesses: a cancelled restore's plugin calls end, and
// Close leaves no process.
func TestCancelledRestoreEndsPluginProcesses(t *testing.T) {
	bin := testbin.Plugins(t)
	h := &Host{}
	ctx, cancel := context.WithCancel(context.Background())
	reg := registry(t, ctx, h, bin)
	cancel()
	_, err := restore.Run(ctx, backupOf(t, obj("Namespace", "shop"), obj("ConfigMap", "settings")), target(t), restore.PlanOptions{Extensions: restore.Extensions{Plugins: reg}}, restore.RunOptions{})
	assert.ErrorIs(t, err, context.Canceled)
	h.Close()
	assert.Zero(t, running(t, bin))
}

// claim is a PersistentVolumeClaim of shop whose example.io/copy annotation tells the
// copy-volume plugin what its operation does; pod mounts claim.
func claim(name, copy string) map[string]any {
	o := obj("PersistentVolumeClaim", name)
	o["metadata"].(map[string]any)["annotations"] = map[string]any{"example.io/copy": copy}
	o["spec"] = map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}}
	return o
}

func pod(name, claim string) map[string]any {
	o := obj("Pod", name)
	o["spec"] = map[string]any{"containers": []any{map[string]any{"name": "app", "image": "app:1"}},
		"volumes": []any{map[string]any{"name": "data", "persistentVolumeClaim": map[string]any{"claimName": claim}}}}
	return o
}

// TestAsyncOperationsOutOfProcess: a v2 plugin built with Velero's framework starts an
// operation for each claim; the restore follows each through the plugin's Progress over
// gRPC. One completes, and the Pod that mounts its claim starts after it; one fails; one
// outlasts the item operation timeout and is cancelled through the plugin's Cancel; one
// is cancelled when the restore is. Execute is called once per claim.
func TestAsyncOperationsOutOfProcess(t *testing.T) {
	bin := testbin.Plugins(t)
	log := filepath.Join(t.TempDir(), "async.log")
	h := &Host{Env: []string{"ASYNC_LOG=" + log}}
	defer h.Close()
	ctx := context.Background()
	reg := registry(t, ctx, h, bin, "example.io/relabel", "example.io/needs-settings", "example.io/skip-secrets", "example.io/fail-on-flags",
		"example.io/crash-once", "example.io/annotate-all", "example.io/hang-on-hang", "example.io/garbage")
	b := backupOf(t, obj("Namespace", "shop"), claim("quick", "1s"), pod("uses-quick", "quick"), claim("broken", "fail"),
		pod("uses-broken", "broken"), claim("stuck", "never"))
	poll := wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Cap: 200 * time.Millisecond, Steps: 1 << 30}
	rep, err := restore.Run(ctx, b, target(t), restore.PlanOptions{Extensions: restore.Extensions{Plugins: reg}},
		restore.RunOptions{ItemOperationTimeout: 3 * time.Second, OperationPoll: poll})
	require.NoError(t, err)
	res := byName(rep)

	quick := res["PersistentVolumeClaim/quick"]
	require.Equal(t, restore.Restored, quick.Status, quick.Reason)
	require.Len(t, quick.Operations, 1)
	op := quick.Operations[0]
	assert.Equal(t, "example.io/copy-volume", op.Plugin)
	assert.True(t, strings.HasPrefix(op.ID, "copy/shop/quick/"), op.ID)
	assert.Equal(t, restore.OperationCompleted, op.Phase)
	assert.Equal(t, "10/10 GB: copying quick", op.Progress)
	assert.GreaterOrEqual(t, op.Ended.Sub(op.Started), 900*time.Millisecond, "it took the second it said")
	assert.False(t, res["Pod/uses-quick"].Created.Before(op.Ended), "the Pod that mounts the claim waits for the copy")

	broken := res["PersistentVolumeClaim/broken"]
	assert.Equal(t, restore.Failed, broken.Status)
	var oe *restore.OperationError
	require.ErrorAs(t, broken.Err, &oe)
	assert.Contains(t, broken.Reason, "the source snapshot is gone")
	// The built-in Pod action asks for the claim as an additional item, as Velero's does:
	// its failure fails the Pod.
	assert.Equal(t, restore.Failed, res["Pod/uses-broken"].Status)
	assert.Contains(t, res["Pod/uses-broken"].Reason, "additional items: a dependency did not succeed")

	stuck := res["PersistentVolumeClaim/stuck"]
	assert.Equal(t, restore.Failed, stuck.Status)
	assert.ErrorIs(t, stuck.Err, restore.ErrOperationTimeout)
	require.Len(t, stuck.Operations, 1)
	assert.Equal(t, restore.OperationCanceled, stuck.Operations[0].Phase)

	lines := asyncLines(t, log)
	assert.ElementsMatch(t, []string{"execute " + op.ID, "execute " + broken.Operations[0].ID, "execute " + stuck.Operations[0].ID,
		"cancel " + stuck.Operations[0].ID}, lines, "Execute once per claim; Cancel for the one that timed out")

	// Cancelling the restore cancels the operation under way.
	require.NoError(t, os.Remove(log))
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rep, err = restore.Run(cctx, backupOf(t, obj("Namespace", "shop"), claim("stuck", "never")), target(t),
		restore.PlanOptions{Extensions: restore.Extensions{Plugins: reg}}, restore.RunOptions{OperationPoll: poll})
	require.NotNil(t, rep, "%v", err)
	stuck = byName(rep)["PersistentVolumeClaim/stuck"]
	require.ErrorIs(t, err, context.DeadlineExceeded, "the claim: %s %s, %v; its operations %+v", stuck.Status, stuck.Reason, stuck.Err, stuck.Operations)
	require.Len(t, stuck.Operations, 1)
	assert.Equal(t, restore.OperationCanceled, stuck.Operations[0].Phase)
	assert.Equal(t, []string{"execute " + stuck.Operations[0].ID, "cancel " + stuck.Operations[0].ID}, asyncLines(t, log))
	h.Close()
	assert.Zero(t, running(t, bin))
}

func asyncLines(t *testing.T, path string) []string {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return slices.DeleteFunc(strings.Split(string(data), "\n"), func(l string) bool { return l == "" })
}

// Plugins are found as Velero's server finds them: under the directory and its
// subdirectories, an executable or a link to one; neither a file without an executable
// bit nor a link to a directory. Velero's own command serves its plugins with
// run-plugins.
func TestExecutablesAsVeleroFindsThem(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	write := func(path string, mode os.FileMode) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"), mode))
	}
	write(filepath.Join(dir, "velero-plugin-for-aws"), 0o755)
	write(filepath.Join(dir, "README"), 0o644)
	write(filepath.Join(dir, "vendor", "plugin-b"), 0o750)
	write(filepath.Join(elsewhere, "velero"), 0o755)
	write(filepath.Join(elsewhere, "data", "plugin-c"), 0o755)
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "velero"), filepath.Join(dir, "velero")))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "data"), filepath.Join(dir, "linked-dir")))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "gone"), filepath.Join(dir, "dangling")))

	found, err := Executables(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "velero"), filepath.Join(dir, "velero-plugin-for-aws"), filepath.Join(dir, "vendor", "plugin-b")}, found)
	assert.Equal(t, []string{filepath.Join(dir, "velero"), "run-plugins"}, Command(found[0]))
	assert.Equal(t, []string{found[1]}, Command(found[1]))

	none, err := Executables(filepath.Join(dir, "absent"))
	require.NoError(t, err)
	assert.Empty(t, none, "a directory that is not there holds no plugin, as for Velero")
}

// A plugin's standard error is passed on but for go-plugin's own records below Info.
func TestQuietLog(t *testing.T) {
	var out bytes.Buffer
	q := &quietLog{to: &out}
	for _, chunk := range []string{
		`{"@level":"debug","@message":"plugin address","@timestamp":"2026-12-07T03:00:00Z","address":"/tmp/plugin1","network":"unix"}` + "\n",
		"time=\"2026-12-07T03:00:00Z\" level=info msg=\"Starting the plugin\"\n{\"@level\":\"warn\",\"@mes",
		"sage\":\"slow\"}\n",
	} {
		_, err := q.Write([]byte(chunk))
		require.NoError(t, err)
	}
	assert.Equal(t, "time=\"2026-12-07T03:00:00Z\" level=info msg=\"Starting the plugin\"\n{\"@level\":\"warn\",\"@message\":\"slow\"}\n", out.String())
}

// A plugin is told the Restore as Velero's server would tell it: what the caller gave
// of its namespace, UID and spec, with the backup's name; Velero's namespace and the
// restore's name when it gave none.
func TestPluginsReadTheRestoreAsVelerosOwn(t *testing.T) {
	var r velerov1.Restore
	require.NoError(t, json.Unmarshal(restoreJSON(&ria.Restore{Name: "shop-copy", Backup: "shop", Namespace: "backups", UID: "u-1",
		Spec: map[string]any{"restorePVs": true, "namespaceMapping": map[string]any{"shop": "shop-copy"}}}), &r))
	assert.Equal(t, "shop-copy", r.Name)
	assert.Equal(t, "backups", r.Namespace)
	assert.Equal(t, types.UID("u-1"), r.UID)
	assert.Equal(t, "shop", r.Spec.BackupName)
	require.NotNil(t, r.Spec.RestorePVs)
	assert.True(t, *r.Spec.RestorePVs)
	assert.Equal(t, map[string]string{"shop": "shop-copy"}, r.Spec.NamespaceMapping)

	r = velerov1.Restore{}
	require.NoError(t, json.Unmarshal(restoreJSON(&ria.Restore{Name: "r", Backup: "b"}), &r))
	assert.Equal(t, "velero", r.Namespace)
}
