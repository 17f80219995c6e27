package test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/hook"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var podGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// readyAtExec is an Executor standing for the kubelet's exec, which this cluster has
// none of (kwok runs its Pods): it records, for each call, whether the container was
// ready in the API server at that moment.
type readyAtExec struct {
	dyn   dynamic.Interface
	mu    sync.Mutex
	calls map[string]execAt
}

type execAt struct {
	container string
	command   []string
	ready     bool
	at        time.Time
}

func (e *readyAtExec) Exec(ctx context.Context, ns, pod, container string, command []string) (string, string, error) {
	p, err := e.dyn.Resource(podGVR).Namespace(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	ready := false
	statuses, _, _ := unstructured.NestedSlice(p.Object, "status", "containerStatuses")
	for _, s := range statuses {
		if cs := s.(map[string]any); cs["name"] == container {
			ready, _ = cs["ready"].(bool)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls[pod] = execAt{container, command, ready, time.Now()}
	return "", "", nil
}

func hooksBackupFile(t *testing.T, ns string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hooks.tar.gz")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	w, err := archive.NewWriter(f, archive.Format11)
	require.NoError(t, err)
	pod := func(name string, labels, annotations map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "namespace": ns, "uid": "pod-" + name, "labels": labels, "annotations": annotations},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "app:1"}},
				"initContainers": []any{map[string]any{"name": "own-init", "image": "init:1"}}}}
	}
	for _, o := range []struct {
		resource string
		obj      map[string]any
	}{
		{"namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns, "uid": "ns"}}},
		{"pods", pod("db", nil, map[string]any{hook.InitImageAnnotation: "busybox:1.36", hook.InitNameAnnotation: "fetch",
			hook.InitCommandAnnotation: `["sh", "-c", "fetch-data"]`, hook.ExecCommandAnnotation: `["psql", "-c", "select 1"]`,
			hook.ExecWaitForReadyAnnotation: "true", hook.ExecOnErrorAnnotation: "Fail"})},
		{"configmaps", map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "after-db", "namespace": ns, "uid": "cm",
			"annotations": map[string]any{"config.kubernetes.io/depends-on": "/namespaces/" + ns + "/Pod/db"}}}},
		{"pods", pod("web", map[string]any{"app": "web"}, nil)},
	} {
		require.NoError(t, w.Add(&unstructured.Unstructured{Object: o.obj}, o.resource, true))
	}
	require.NoError(t, w.Close())
	return path
}

// TestRestoreHooksIntoTheRealServer restores Pods with Velero's restore hooks into the
// real API server, whose Pods kwok runs (scheduled, started, ready, with no kubelet):
// the init containers of the annotations and of the spec are stored first, as the API
// server validated them; each exec hook runs once its container is ready, and what
// depends on the Pod is created after it. The command itself runs through a seam: with
// no kubelet, pods/exec has nothing to reach, and the last part shows the command line
// naming that failure.
func TestRestoreHooksIntoTheRealServer(t *testing.T) {
	t.Parallel() // its own control plane: beside the other tests that have theirs
	c := startCluster(t, harness.Options{Controllers: []string{"namespace", "nodelifecycle"}, Nodes: 1})
	ctx := context.Background()
	backup := hooksBackupFile(t, "hooked")
	b, err := archive.ReadFile(ctx, backup, archive.Options{})
	require.NoError(t, err)
	tgt := restoreTarget(t, c.Config)
	exec := &readyAtExec{dyn: tgt.Dynamic, calls: map[string]execAt{}}
	tgt.Exec = exec
	hooks := &hook.Spec{Resources: []hook.Resource{{Name: "web-hooks", IncludedNamespaces: []string{"hooked"}, LabelSelector: "app=web",
		PostHooks: []hook.Hook{
			{Init: &hook.Init{InitContainers: []map[string]any{{"name": "seed", "image": "seed:1", "command": []any{"seed"}}}}},
			{Exec: &hook.Exec{Command: []string{"curl", "localhost/warm"}, OnError: hook.Fail}},
		}}}}
	rep, err := restore.Run(ctx, b, tgt, restore.PlanOptions{Selection: restore.Selection{Hooks: hooks}}, restore.RunOptions{ItemTimeout: time.Minute})
	require.NoError(t, err)
	if !rep.OK() {
		for _, name := range []string{"db", "web"} {
			pod, err := tgt.Dynamic.Resource(podGVR).Namespace("hooked").Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				t.Logf("%s: spec.nodeName %v, status %v", name, pod.Object["spec"].(map[string]any)["nodeName"], pod.Object["status"])
			}
		}
	}
	res := map[string]restore.ObjectResult{}
	for o := range rep.Objects() {
		res[o.Kind+"/"+o.Name] = o
	}
	require.True(t, rep.OK(), "%v %s %s", rep.Summary, res["Pod/db"].Reason, res["Pod/web"].Reason)

	for name, want := range map[string][]string{"db": {"fetch", "own-init"}, "web": {"seed", "own-init"}} {
		pod, err := tgt.Dynamic.Resource(podGVR).Namespace("hooked").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		cs, _, _ := unstructured.NestedSlice(pod.Object, "spec", "initContainers")
		var names []string
		for _, c := range cs {
			names = append(names, c.(map[string]any)["name"].(string))
		}
		assert.Equal(t, want, names, "%s: the hooks' init containers first", name)
	}
	db, ok := exec.calls["db"]
	require.True(t, ok, "db's hook ran")
	assert.Equal(t, []string{"psql", "-c", "select 1"}, db.command)
	assert.True(t, db.ready, "db's hook ran once its container was ready (wait-for-ready)")
	assert.False(t, res["ConfigMap/after-db"].Created.Before(db.at), "what depends on the Pod is created after its hook")
	web, ok := exec.calls["web"]
	require.True(t, ok, "the spec's hook ran in web")
	assert.Equal(t, "app", web.container)
	assert.Equal(t, []restore.HookResult{{Source: "<annotations>", Container: "app"}}, res["Pod/db"].Hooks)

	// From the command line, the hook goes to the API server's pods/exec, which has no
	// kubelet to reach here: the Pod fails (onError Fail), naming the hook and the exec.
	code, text := cli(t, "restore", "--backup", backup, "--kubeconfig", c.Kubeconfig, "--namespace-mappings", "hooked:hooked-cli")
	assert.Equal(t, 1, code, text)
	assert.Contains(t, text, "exec hook <annotations> in container app: exec in hooked-cli/db container app")
}
