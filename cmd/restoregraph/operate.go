package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// controllerMetrics are what the controller tells Prometheus: Restores by how they
// ended, objects by resource and outcome, how long restores take, how many run and
// how many wait for admission, and its Kubernetes client's requests.
type controllerMetrics struct {
	registry   *prometheus.Registry
	restores   *prometheus.CounterVec // by phase
	objects    *prometheus.CounterVec // by resource and status
	duration   prometheus.Histogram   // seconds, from taken to ended
	inProgress prometheus.Gauge       // carried out now by this process
	waits      prometheus.Counter     // restores that waited for admission
	takenOver  prometheus.Counter     // Restores taken over from a process that died
	waiting    *prometheus.GaugeVec   // Restores waiting now, by what for
	waited     prometheus.Histogram   // seconds a Restore waited for admission
}

func newControllerMetrics(electing func() float64) *controllerMetrics {
	m := &controllerMetrics{
		registry: prometheus.NewRegistry(),
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
		Help: "Unfinished Restores this process stands for (queue depth, across the replicas)."}, electing)
	m.registry.MustRegister(m.restores, m.objects, m.duration, m.inProgress, m.waits, m.takenOver, m.waiting, m.waited, elections,
		restClient.latency, restClient.results, restClient.limiter,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	clientmetrics.Register(clientmetrics.RegisterOpts{RequestLatency: restClient.latency, RequestResult: restClient.results,
		RateLimiterLatency: restClient.limiter})
	return m
}

// restClient holds client-go's own metrics, as kube-controller-manager exposes them:
// each request's latency by verb and host, its result by code, method and host, and the
// time it waited for the client's rate limiter (--client-qps). client-go reports them
// to process-wide hooks (tools/metrics), set once.
var restClient = struct {
	latency, limiter restClientLatency
	results          restClientResults
}{
	latency: restClientLatency{prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rest_client_request_duration_seconds",
		Help: "Request latency of the controller's Kubernetes client, by verb and host.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"verb", "host"})},
	limiter: restClientLatency{prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rest_client_rate_limiter_duration_seconds",
		Help: "Time the controller's Kubernetes client waited for its rate limiter, by verb and host.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"verb", "host"})},
	results: restClientResults{prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rest_client_requests_total",
		Help: "Requests of the controller's Kubernetes client, by status code, method and host."}, []string{"code", "method", "host"})},
}

// restClientLatency is a histogram of durations as client-go's LatencyMetric.
type restClientLatency struct{ *prometheus.HistogramVec }

func (h restClientLatency) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	h.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

// restClientResults is a counter as client-go's ResultMetric.
type restClientResults struct{ *prometheus.CounterVec }

func (c restClientResults) Increment(_ context.Context, code, method, host string) {
	c.WithLabelValues(code, method, host).Inc()
}

// serveOperations serves /metrics, /healthz (the process answers) and /readyz (its
// informer has listed the Restores) on address until ctx is done.
func serveOperations(ctx context.Context, address string, m *controllerMetrics, ready *atomic.Bool, log *slog.Logger) (stop func(), err error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "the Restores are not listed yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	// Go's profiles, as Kubernetes' own components serve them (--profiling): where a
	// running controller's time, memory and goroutines go.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	l, err := net.Listen("tcp", address)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("the metrics and health endpoints stopped", "error", err)
		}
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
	}, nil
}
