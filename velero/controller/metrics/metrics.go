// Package metrics tells Prometheus what a controller.Controller does, and serves it:
// Restores by how they ended, their objects by resource and outcome, how long
// restores take, how many run and how many wait and for what, and the controller's
// Kubernetes client's requests as client-go reports them (the metrics
// kube-controller-manager exposes for its own).
package metrics

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientmetrics "k8s.io/client-go/tools/metrics"

	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero/controller"
)

// Prometheus is a controller.Metrics whose figures Registry gathers.
type Prometheus struct {
	// Registry holds the controller's metrics, client-go's and the Go runtime's and
	// process's; Serve serves it.
	Registry *prometheus.Registry

	restores   *prometheus.CounterVec // by phase
	objects    *prometheus.CounterVec // by resource and status
	duration   prometheus.Histogram   // seconds, from taken to ended
	inProgress prometheus.Gauge       // carried out now by this process
	waits      prometheus.Counter     // restores that waited for admission
	takenOver  prometheus.Counter     // Restores taken over from a process that died
	waiting    *prometheus.GaugeVec   // Restores waiting now, by what for
	waited     prometheus.Histogram   // seconds a Restore waited for admission
}

var _ controller.Metrics = (*Prometheus)(nil)

// NewPrometheus returns the metrics, registered in a registry of their own, with
// client-go's, which client-go reports to hooks of its process, set once. electing is
// how many unfinished Restores the process stands for (Controller.Electing).
func NewPrometheus(electing func() int) *Prometheus {
	m := &Prometheus{
		Registry: prometheus.NewRegistry(),
		restores: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "restoregraph_restores_total",
			Help: "Restores carried out by this process, by the phase they ended in."}, []string{"phase"}),
		objects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "restoregraph_restore_objects_total",
			Help: "Objects of the Restores carried out by this process, by group-resource and how they ended."}, []string{"resource", "status"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "restoregraph_restore_duration_seconds",
			Help: "How long a Restore took, from taken to ended.", Buckets: prometheus.ExponentialBuckets(0.5, 2, 14)}),
		inProgress: prometheus.NewGauge(prometheus.GaugeOpts{Name: "restoregraph_restores_in_progress",
			Help: "Restores this process is carrying out now."}),
		waits: prometheus.NewCounter(prometheus.CounterOpts{Name: "restoregraph_admission_waits_total",
			Help: "Restores that waited for an operation touching the same objects."}),
		takenOver: prometheus.NewCounter(prometheus.CounterOpts{Name: "restoregraph_restores_taken_over_total",
			Help: "Restores taken over from a process that stopped holding their Lease."}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "restoregraph_restores_waiting",
			Help: "Restores this process holds that wait now: for one created earlier to enter admission (earlier), for a place (slot), or for an operation touching the same objects (admission)."},
			[]string{"for"}),
		waited: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "restoregraph_admission_wait_seconds",
			Help: "How long a Restore that waited for admission waited.", Buckets: prometheus.ExponentialBuckets(0.5, 2, 14)}),
	}
	elections := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "restoregraph_restore_elections",
		Help: "Unfinished Restores this process stands for (queue depth, across the replicas)."}, func() float64 { return float64(electing()) })
	m.Registry.MustRegister(m.restores, m.objects, m.duration, m.inProgress, m.waits, m.takenOver, m.waiting, m.waited, elections,
		restClient.latency, restClient.results, restClient.limiter,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerClientMetrics()
	return m
}

func (m *Prometheus) InProgress(delta int) { m.inProgress.Add(float64(delta)) }

func (m *Prometheus) Waiting(w controller.Wait, delta int) {
	m.waiting.WithLabelValues(string(w)).Add(float64(delta))
	if w == controller.WaitAdmission && delta > 0 {
		m.waits.Inc()
	}
}

func (m *Prometheus) AdmissionWaited(d time.Duration) { m.waited.Observe(d.Seconds()) }

func (m *Prometheus) TakenOver() { m.takenOver.Inc() }

func (m *Prometheus) RestoreEnded(phase velerov1.RestorePhase, took time.Duration) {
	m.restores.WithLabelValues(string(phase)).Inc()
	m.duration.Observe(took.Seconds())
}

func (m *Prometheus) ObjectEnded(resource schema.GroupResource, status restore.Status) {
	m.objects.WithLabelValues(resource.String(), string(status)).Inc()
}

// restClient holds client-go's own metrics, as kube-controller-manager exposes them:
// each request's latency by verb and host, its result by code, method and host, and the
// time it waited for the client's rate limiter. client-go reports them to process-wide
// hooks (tools/metrics), which take the first registration only.
var restClient = struct {
	latency, limiter clientLatency
	results          clientResults
}{
	latency: clientLatency{prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rest_client_request_duration_seconds",
		Help: "Request latency of the controller's Kubernetes client, by verb and host.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"verb", "host"})},
	limiter: clientLatency{prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rest_client_rate_limiter_duration_seconds",
		Help: "Time the controller's Kubernetes client waited for its rate limiter, by verb and host.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"verb", "host"})},
	results: clientResults{prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rest_client_requests_total",
		Help: "Requests of the controller's Kubernetes client, by status code, method and host."}, []string{"code", "method", "host"})},
}

var registerClientMetrics = sync.OnceFunc(func() {
	clientmetrics.Register(clientmetrics.RegisterOpts{RequestLatency: restClient.latency, RequestResult: restClient.results,
		RateLimiterLatency: restClient.limiter})
})

// clientLatency is a histogram of durations as client-go's LatencyMetric.
type clientLatency struct{ *prometheus.HistogramVec }

func (h clientLatency) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	h.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

// clientResults is a counter as client-go's ResultMetric.
type clientResults struct{ *prometheus.CounterVec }

func (c clientResults) Increment(_ context.Context, code, method, host string) {
	c.WithLabelValues(code, method, host).Inc()
}
