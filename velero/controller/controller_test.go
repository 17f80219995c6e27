package controller

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/restoregraph/restoregraph/velero"
)

func veleroRestore(name string, spec map[string]any, phase string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "velero.io/v1", "kind": "Restore",
		"metadata": map[string]any{"name": name, "namespace": "velero"}, "spec": spec}}
	if phase != "" {
		o.Object["status"] = map[string]any{"phase": phase}
	}
	return o
}

// A Restore the controller cannot serve fails validation with the field named, saying
// which process took it; one that has ended is left alone.
func TestControllerValidatesAndLeavesOthersAlone(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{velero.RestoresResource: "RestoreList"},
		veleroRestore("volumes", map[string]any{"backupName": "b", "resourcePolicy": map[string]any{"kind": "configmap", "name": "p"}}, ""),
		veleroRestore("done", map[string]any{"backupName": "b"}, "Completed"))
	events := record.NewFakeRecorder(10)
	c := &Controller{velero: velero.Client{Dynamic: dyn, Namespace: "velero"}, log: slog.New(slog.DiscardHandler),
		identity: "replica-1", slots: make(chan struct{}, 1), events: events, metrics: &countingMetrics{},
		restores: cache.NewStore(cache.MetaNamespaceKeyFunc)}
	ctx := context.Background()
	require.NoError(t, c.lead(ctx, "volumes"))
	require.NoError(t, c.lead(ctx, "done"))
	require.NoError(t, c.lead(ctx, "gone"), "a Restore deleted meanwhile is no error")

	get := func(name string) *unstructured.Unstructured {
		o, err := dyn.Resource(velero.RestoresResource).Namespace("velero").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return o
	}
	v := get("volumes")
	phase, _, _ := unstructured.NestedString(v.Object, "status", "phase")
	assert.Equal(t, "FailedValidation", phase)
	errs, _, _ := unstructured.NestedStringSlice(v.Object, "status", "validationErrors")
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0], "spec.resourcePolicy: volume policies are not supported")
	assert.Equal(t, "replica-1", v.GetAnnotations()[TakenByAnnotation])
	assert.Equal(t, []string{ExternalResourcesFinalizer}, v.GetFinalizers(), "its files are removed before it goes, as Velero's")
	for _, field := range []string{"startTimestamp", "completionTimestamp"} {
		ts, _, _ := unstructured.NestedString(v.Object, "status", field)
		assert.NotEmpty(t, ts, field)
	}
	assert.Equal(t, "Normal Taken taken by replica-1", <-events.Events)
	assert.Contains(t, <-events.Events, "Warning FailedValidation spec.resourcePolicy")
	assert.Equal(t, 1, c.metrics.(*countingMetrics).ended["FailedValidation"])
	done := get("done")
	phase, _, _ = unstructured.NestedString(done.Object, "status", "phase")
	assert.Equal(t, "Completed", phase)
	assert.Empty(t, done.GetAnnotations()[TakenByAnnotation], "a finished Restore is not taken")
}

// A Restore is not planned before every Restore created before it has entered admission
// or ended: overlapping ones are admitted in the order they were created.
func TestControllerTakesRestoresInTheOrderTheyWereCreated(t *testing.T) {
	at := func(o *unstructured.Unstructured, sec int64) *unstructured.Unstructured {
		o.SetCreationTimestamp(metav1.Unix(1_700_000_000+sec, 0))
		return o
	}
	older := at(veleroRestore("older", map[string]any{"backupName": "b"}, ""), 0)
	sameSecond := at(veleroRestore("a-same-second", map[string]any{"backupName": "b"}, ""), 10)
	newer := at(veleroRestore("newer", map[string]any{"backupName": "b", "resourcePolicy": map[string]any{"kind": "configmap", "name": "p"}}, ""), 10)
	done := at(veleroRestore("done-earlier", map[string]any{"backupName": "b"}, "Completed"), -5)
	deleting := at(veleroRestore("deleted-earlier", map[string]any{"backupName": "b"}, ""), -3)
	gone := metav1.Unix(1_700_000_100, 0)
	deleting.SetDeletionTimestamp(&gone)
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for _, o := range []*unstructured.Unstructured{older, sameSecond, newer, done, deleting} {
		require.NoError(t, store.Add(o))
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{velero.RestoresResource: "RestoreList"},
		newer.DeepCopy())
	c := &Controller{velero: velero.Client{Dynamic: dyn, Namespace: "velero"}, log: slog.New(slog.DiscardHandler), identity: "replica-1",
		slots: make(chan struct{}, 1), events: record.NewFakeRecorder(10), metrics: &countingMetrics{}, restores: store}
	phase := func() string {
		o, err := dyn.Resource(velero.RestoresResource).Namespace("velero").Get(context.Background(), "newer", metav1.GetOptions{})
		require.NoError(t, err)
		p, _, _ := unstructured.NestedString(o.Object, "status", "phase")
		return p
	}

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	m := c.metrics.(*countingMetrics)
	led := make(chan error)
	go func() { led <- c.lead(ctx, "newer") }()
	assert.Eventually(t, func() bool { return m.waiting(WaitEarlier) == 1 }, time.Second, 10*time.Millisecond, "counted as waiting")
	require.NoError(t, <-led)
	assert.Empty(t, phase(), "not taken while older ones have not entered admission")
	assert.Zero(t, m.waiting(WaitEarlier))

	older.SetAnnotations(map[string]string{AdmissionAnnotation: "admitted"})
	require.NoError(t, store.Update(older))
	ctx, cancel = context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	require.NoError(t, c.lead(ctx, "newer"))
	assert.Empty(t, phase(), "one created in the same second with a name before it has not either")

	sameSecond.SetAnnotations(map[string]string{AdmissionAnnotation: "waiting"})
	require.NoError(t, store.Update(sameSecond))
	require.NoError(t, c.lead(context.Background(), "newer"))
	assert.Equal(t, "FailedValidation", phase(), "taken once every older one is in admission (one finished or being deleted is not waited for)")
}

// A deleted Restore that holds Velero's finalizer is let go once its files are removed
// (here its backup is gone: nothing to remove, as Velero).
func TestControllerLetsADeletedRestoreGo(t *testing.T) {
	deleted := veleroRestore("deleted", map[string]any{"backupName": "gone"}, "Completed")
	deleted.SetFinalizers([]string{"example.io/other", ExternalResourcesFinalizer})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{velero.RestoresResource: "RestoreList",
		{Group: "velero.io", Version: "v1", Resource: "backups"}: "BackupList"}, deleted)
	c := &Controller{velero: velero.Client{Dynamic: dyn, Namespace: "velero"}, log: slog.New(slog.DiscardHandler)}
	now := metav1.Now()
	deleted.SetDeletionTimestamp(&now)
	require.NoError(t, c.finalize(context.Background(), deleted))
	o, err := dyn.Resource(velero.RestoresResource).Namespace("velero").Get(context.Background(), "deleted", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"example.io/other"}, o.GetFinalizers(), "Velero's finalizer removed, others kept")
}

// countingMetrics counts what the controller tells its metrics.
type countingMetrics struct {
	nopMetrics
	mu    sync.Mutex
	wait  map[Wait]int
	ended map[velerov1.RestorePhase]int
}

func (m *countingMetrics) Waiting(w Wait, delta int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.wait == nil {
		m.wait = map[Wait]int{}
	}
	m.wait[w] += delta
}

func (m *countingMetrics) waiting(w Wait) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.wait[w]
}

func (m *countingMetrics) RestoreEnded(phase velerov1.RestorePhase, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended == nil {
		m.ended = map[velerov1.RestorePhase]int{}
	}
	m.ended[phase]++
}
