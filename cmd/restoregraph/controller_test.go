package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
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
		identity: "replica-1", slots: make(chan struct{}, 1), events: events, metrics: newControllerMetrics(func() float64 { return 0 })}
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
