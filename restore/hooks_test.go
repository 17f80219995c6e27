package restore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/hook"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// execCall is one command a fakeExec ran.
type execCall struct {
	pod, container string
	command        []string
	at             time.Time
}

// fakeExec stands for the kubelet behind pods/exec: it records each call, and fails for
// the Pods in fail.
type fakeExec struct {
	mu    sync.Mutex
	calls []execCall
	fail  map[string]bool
}

func (f *fakeExec) Exec(_ context.Context, _, pod, container string, command []string) (string, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, execCall{pod, container, command, time.Now()})
	if f.fail[pod] {
		return "", "psql: connection refused", errors.New("command terminated with exit code 2")
	}
	return "ok", "", nil
}

func (f *fakeExec) call(pod string) (execCall, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if c.pod == pod {
			return c, true
		}
	}
	return execCall{}, false
}

func hookedPod(name string, labels, annotations map[string]any) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "shop", "uid": "pod-" + name, "labels": labels, "annotations": annotations},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "app:1"}},
			"initContainers": []any{map[string]any{"name": "own-init", "image": "init:1"}}}}
}

func after(name, pod string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "shop", "uid": "cm-" + name,
		"annotations": map[string]any{"config.kubernetes.io/depends-on": "/namespaces/shop/Pod/" + pod}}}
}

func hooksBackup(t *testing.T) *archive.Backup {
	return backupOf(t,
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "ns"}},
		hookedPod("db", nil, map[string]any{hook.InitImageAnnotation: "busybox", hook.InitNameAnnotation: "fetch",
			hook.ExecCommandAnnotation: `["psql", "-c", "select 1"]`, hook.ExecOnErrorAnnotation: "Fail"}),
		after("after-db", "db"),
		hookedPod("web", map[string]any{"app": "web"}, nil),
		hookedPod("flaky", nil, map[string]any{hook.ExecCommandAnnotation: "warm-cache"}),
		hookedPod("broken", nil, map[string]any{hook.ExecCommandAnnotation: "migrate", hook.ExecOnErrorAnnotation: "Fail"}),
		after("after-broken", "broken"),
		hookedPod("never", nil, map[string]any{hook.ExecCommandAnnotation: "true", hook.ExecOnErrorAnnotation: "Fail", hook.ExecWaitTimeoutAnnotation: "200ms"}),
		hookedPod("malformed", nil, map[string]any{hook.ExecCommandAnnotation: "true", hook.ExecTimeoutAnnotation: "soon"}))
}

// kubelet marks the Pods of shop running, but those in never, as a kubelet would once
// it started them.
func kubelet(t *testing.T, tgt Target, never ...string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
			pods, err := tgt.Dynamic.Resource(podsGVR).Namespace("shop").List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for _, p := range pods.Items {
				if _, has, _ := unstructured.NestedSlice(p.Object, "status", "containerStatuses"); has || slices.Contains(never, p.GetName()) {
					continue
				}
				p.Object["status"] = map[string]any{"phase": "Running", "containerStatuses": []any{map[string]any{"name": "app", "ready": true,
					"state": map[string]any{"running": map[string]any{"startedAt": "2026-11-25T00:00:00Z"}}}}}
				_, _ = tgt.Dynamic.Resource(podsGVR).Namespace("shop").UpdateStatus(ctx, &p, metav1.UpdateOptions{})
			}
		}
	}()
	return func() { cancel(); <-done }
}

// Restore hooks, as Velero's: init containers put first, from a Pod's annotations or
// else from the spec; exec hooks run once the container is running, through the
// target's executor, and what depends on the Pod waits for them. A failing hook with
// onError Fail fails its Pod and skips its dependents; with Continue it is a warning; a
// container that does not come up within the wait timeout fails the hook.
func TestRestoreHooks(t *testing.T) {
	_, tgt := cluster(t, memcluster.Options{})
	exec := &fakeExec{fail: map[string]bool{"flaky": true, "broken": true}}
	tgt.Exec = exec
	defer kubelet(t, tgt, "never")()
	hooks := &hook.Spec{Resources: []hook.Resource{{Name: "web-hooks", LabelSelector: "app=web", PostHooks: []hook.Hook{
		{Init: &hook.Init{InitContainers: []map[string]any{{"name": "seed", "image": "seed:1"}}}},
		{Exec: &hook.Exec{Command: []string{"curl", "localhost/warm"}, OnError: hook.Fail}},
	}}}}
	po, ro := testOptions{Retry: fastRetry, OperationPoll: fastPoll}.split()
	po.Selection.Hooks = hooks
	p, err := NewPlan(context.Background(), hooksBackup(t), tgt, po)
	require.NoError(t, err)
	rep, err := Apply(context.Background(), p, tgt, ro)
	require.NoError(t, err)
	res := byName(rep)

	inits := func(name string) []string {
		pod, err := tgt.Dynamic.Resource(podsGVR).Namespace("shop").Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		cs, _, _ := unstructured.NestedSlice(pod.Object, "spec", "initContainers")
		var out []string
		for _, c := range cs {
			out = append(out, c.(map[string]any)["name"].(string))
		}
		return out
	}
	assert.Equal(t, []string{"fetch", "own-init"}, inits("db"), "the annotations' init container first")
	assert.Equal(t, []string{"seed", "own-init"}, inits("web"), "the spec's, for a Pod without annotations")
	assert.Equal(t, []string{"own-init"}, inits("flaky"))

	db := res["pods/db"]
	assert.Equal(t, Restored, db.Status, db.Reason)
	assert.Equal(t, []HookResult{{Source: "<annotations>", Container: "app"}}, db.Hooks)
	call, ok := exec.call("db")
	require.True(t, ok)
	assert.Equal(t, []string{"psql", "-c", "select 1"}, call.command)
	assert.False(t, res["configmaps/after-db"].Created.Before(call.at), "what depends on the Pod waits for its hook")
	call, ok = exec.call("web")
	require.True(t, ok)
	assert.Equal(t, []string{"curl", "localhost/warm"}, call.command)
	assert.Equal(t, "app", call.container)

	flaky := res["pods/flaky"]
	assert.Equal(t, Restored, flaky.Status)
	require.Len(t, flaky.Warnings, 1)
	assert.Contains(t, flaky.Warnings[0], "exit code 2 (onError Continue)")
	assert.NotContains(t, flaky.Warnings[0], "connection refused", "what the command wrote is not kept")

	broken := res["pods/broken"]
	assert.Equal(t, Failed, broken.Status)
	var he *HookError
	require.ErrorAs(t, broken.Err, &he)
	assert.Equal(t, "app", he.Container)
	assert.Equal(t, Skipped, res["configmaps/after-broken"].Status)

	never := res["pods/never"]
	assert.Equal(t, Failed, never.Status)
	assert.ErrorIs(t, never.Err, ErrContainerNotUp)
	_, ran := exec.call("never")
	assert.False(t, ran, "nothing runs in a container that is not up")

	malformed := res["pods/malformed"]
	assert.Equal(t, Failed, malformed.Status)
	assert.Contains(t, malformed.Reason, `exec hook <annotations>: post.hook.restore.velero.io/exec-timeout: time: invalid duration "soon"`)

	// Verify expects the init containers the hooks add.
	v, err := Verify(context.Background(), p, tgt, ro)
	require.NoError(t, err)
	for _, o := range v.Objects {
		if o.Resource == "pods" {
			assert.Equal(t, Verified, o.Verdict, "%s: %v", o.Name, o.Problems)
		}
	}
}
