package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/plugin/velerohost"
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
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{veleroRestoresGVR: "RestoreList"},
		veleroRestore("volumes", map[string]any{"backupName": "b", "restorePVs": true}, ""),
		veleroRestore("done", map[string]any{"backupName": "b"}, "Completed"))
	events := record.NewFakeRecorder(10)
	c := &controller{velero: velerohost.Velero{Dynamic: dyn, Namespace: "velero"}, log: slog.New(slog.DiscardHandler),
		identity: "replica-1", slots: make(chan struct{}, 1), events: events, metrics: newControllerMetrics(func() float64 { return 0 }),
		restores: cache.NewStore(cache.MetaNamespaceKeyFunc)}
	ctx := context.Background()
	require.NoError(t, c.lead(ctx, "volumes"))
	require.NoError(t, c.lead(ctx, "done"))
	require.NoError(t, c.lead(ctx, "gone"), "a Restore deleted meanwhile is no error")

	get := func(name string) *unstructured.Unstructured {
		o, err := dyn.Resource(veleroRestoresGVR).Namespace("velero").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return o
	}
	v := get("volumes")
	phase, _, _ := unstructured.NestedString(v.Object, "status", "phase")
	assert.Equal(t, "FailedValidation", phase)
	errs, _, _ := unstructured.NestedStringSlice(v.Object, "status", "validationErrors")
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0], "spec.restorePVs: true: volume data is not restored")
	assert.Equal(t, "replica-1", v.GetAnnotations()[TakenByAnnotation])
	assert.Equal(t, []string{ExternalResourcesFinalizer}, v.GetFinalizers(), "its files are removed before it goes, as Velero's")
	for _, field := range []string{"startTimestamp", "completionTimestamp"} {
		ts, _, _ := unstructured.NestedString(v.Object, "status", field)
		assert.NotEmpty(t, ts, field)
	}
	assert.Equal(t, "Normal Taken taken by replica-1", <-events.Events)
	assert.Contains(t, <-events.Events, "Warning FailedValidation spec.restorePVs: true")
	assert.Equal(t, 1.0, testutil.ToFloat64(c.metrics.restores.WithLabelValues("FailedValidation")))
	done := get("done")
	phase, _, _ = unstructured.NestedString(done.Object, "status", "phase")
	assert.Equal(t, "Completed", phase)
	assert.Empty(t, done.GetAnnotations()[TakenByAnnotation], "a finished Restore is not taken")
}

// The controller's /metrics hold its Kubernetes client's requests, as client-go reports
// them: latency by verb and host, and results by code.
func TestControllerMetricsHoldClientRequests(t *testing.T) {
	m := newControllerMetrics(func() float64 { return 0 })
	cfg, stop, err := memcluster.Start(memcluster.Options{})
	require.NoError(t, err)
	defer stop()
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(context.Background(), "absent", metav1.GetOptions{})
	require.Error(t, err)
	host := strings.TrimPrefix(cfg.Host, "http://")
	assert.Equal(t, 1.0, testutil.ToFloat64(restClient.results.WithLabelValues("404", "GET", host)))
	families, err := m.registry.Gather()
	require.NoError(t, err)
	var requests uint64
	for _, f := range families {
		if f.GetName() != "rest_client_request_duration_seconds" {
			continue
		}
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if l.GetName() == "host" && l.GetValue() == host {
					requests += metric.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	assert.Equal(t, uint64(1), requests, "the request's latency is observed once")
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
	newer := at(veleroRestore("newer", map[string]any{"backupName": "b", "restorePVs": true}, ""), 10)
	done := at(veleroRestore("done-earlier", map[string]any{"backupName": "b"}, "Completed"), -5)
	deleting := at(veleroRestore("deleted-earlier", map[string]any{"backupName": "b"}, ""), -3)
	gone := metav1.Unix(1_700_000_100, 0)
	deleting.SetDeletionTimestamp(&gone)
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for _, o := range []*unstructured.Unstructured{older, sameSecond, newer, done, deleting} {
		require.NoError(t, store.Add(o))
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{veleroRestoresGVR: "RestoreList"},
		newer.DeepCopy())
	c := &controller{velero: velerohost.Velero{Dynamic: dyn, Namespace: "velero"}, log: slog.New(slog.DiscardHandler), identity: "replica-1",
		slots: make(chan struct{}, 1), events: record.NewFakeRecorder(10), metrics: newControllerMetrics(func() float64 { return 0 }), restores: store}
	phase := func() string {
		o, err := dyn.Resource(veleroRestoresGVR).Namespace("velero").Get(context.Background(), "newer", metav1.GetOptions{})
		require.NoError(t, err)
		p, _, _ := unstructured.NestedString(o.Object, "status", "phase")
		return p
	}

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	waiting := c.metrics.waiting.WithLabelValues("earlier")
	led := make(chan error)
	go func() { led <- c.lead(ctx, "newer") }()
	assert.Eventually(t, func() bool { return testutil.ToFloat64(waiting) == 1 }, time.Second, 10*time.Millisecond, "counted as waiting")
	require.NoError(t, <-led)
	assert.Empty(t, phase(), "not taken while older ones have not entered admission")
	assert.Zero(t, testutil.ToFloat64(waiting))

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
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{veleroRestoresGVR: "RestoreList",
		{Group: "velero.io", Version: "v1", Resource: "backups"}: "BackupList"}, deleted)
	c := &controller{velero: velerohost.Velero{Dynamic: dyn, Namespace: "velero"}, log: slog.New(slog.DiscardHandler)}
	now := metav1.Now()
	deleted.SetDeletionTimestamp(&now)
	require.NoError(t, c.finalize(context.Background(), deleted))
	o, err := dyn.Resource(veleroRestoresGVR).Namespace("velero").Get(context.Background(), "deleted", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"example.io/other"}, o.GetFinalizers(), "Velero's finalizer removed, others kept")
}
