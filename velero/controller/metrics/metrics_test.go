package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero/controller"
)

// The controller's /metrics hold its Kubernetes client's requests, as client-go reports
// them: latency by verb and host, and results by code.
func TestMetricsHoldClientRequests(t *testing.T) {
	m := NewPrometheus(func() int { return 0 })
	cfg, stop, err := memcluster.Start(memcluster.Options{})
	require.NoError(t, err)
	defer stop()
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(context.Background(), "absent", metav1.GetOptions{})
	require.Error(t, err)
	host := strings.TrimPrefix(cfg.Host, "http://")
	assert.Equal(t, 1.0, testutil.ToFloat64(restClient.results.WithLabelValues("404", "GET", host)))
	families, err := m.Registry.Gather()
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

// What the controller tells reaches its series: a Restore waiting for admission is
// counted once, when it starts waiting, and shown waiting until it stops.
func TestPrometheusCountsWhatItIsTold(t *testing.T) {
	m := NewPrometheus(func() int { return 3 })
	m.Waiting(controller.WaitAdmission, 1)
	assert.Equal(t, 1.0, testutil.ToFloat64(m.waits))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.waiting.WithLabelValues("admission")))
	m.Waiting(controller.WaitAdmission, -1)
	m.Waiting(controller.WaitSlot, 1)
	assert.Equal(t, 1.0, testutil.ToFloat64(m.waits), "counted once a wait")
	assert.Zero(t, testutil.ToFloat64(m.waiting.WithLabelValues("admission")))
	m.RestoreEnded(velerov1.RestorePhasePartiallyFailed, 2*time.Second)
	m.ObjectEnded(schema.GroupResource{Group: "apps", Resource: "deployments"}, restore.Restored)
	assert.Equal(t, 1.0, testutil.ToFloat64(m.restores.WithLabelValues("PartiallyFailed")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.objects.WithLabelValues("deployments.apps", "Restored")))
	n, err := testutil.GatherAndCount(m.Registry, "restoregraph_restore_elections")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, 3.0, gauge(t, m, "restoregraph_restore_elections"))
}

func gauge(t *testing.T, m *Prometheus, name string) float64 {
	families, err := m.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}
