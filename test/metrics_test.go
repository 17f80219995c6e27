package test

import (
	"context"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/restoregraph/restoregraph/test/harness"
)

// sample is one series of a metric the API server exposes: its labels and its value.
type sample struct {
	labels map[string]string
	value  float64
}

// label returns the value of the label called name, or "".
func (s sample) label(name string) string { return s.labels[name] }

// counters reads the series of metric from c's API server's /metrics.
func counters(tb testing.TB, c *harness.Cluster, metric string) []sample {
	tb.Helper()
	out, err := readCounters(context.Background(), c, metric)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// readCounters is counters for a caller that must not fail the test (a goroutine of
// its own).
func readCounters(ctx context.Context, c *harness.Cluster, metric string) ([]sample, error) {
	out, err := readMetrics(ctx, c, metric)
	return out[metric], err
}

// readMetrics reads the series of each of metrics from one answer of c's API server's
// /metrics, by metric.
func readMetrics(ctx context.Context, c *harness.Cluster, metrics ...string) (map[string][]sample, error) {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	data, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return parseMetrics(string(data), metrics...)
}

// parseMetrics reads the series of each of metrics from text in Prometheus' text
// format (expfmt), by metric. A histogram's or a summary's name_sum and name_count are
// asked for by those names, as the text writes them.
func parseMetrics(text string, metrics ...string) (map[string][]sample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	out := map[string][]sample{}
	for _, name := range metrics {
		value := scalar
		f, ok := families[name]
		if !ok {
			for suffix, of := range map[string]func(*dto.Metric) (float64, bool){"_sum": sum, "_count": count} {
				if base, cut := strings.CutSuffix(name, suffix); cut && families[base] != nil {
					f, value = families[base], of
				}
			}
		}
		if f == nil {
			continue
		}
		for _, m := range f.GetMetric() {
			v, ok := value(m)
			if !ok {
				continue
			}
			labels := make(map[string]string, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[name] = append(out[name], sample{labels: labels, value: v})
		}
	}
	return out, nil
}

// scalar reads a counter's, a gauge's or an untyped metric's value; sum and count read
// a histogram's or a summary's sum and count.
func scalar(m *dto.Metric) (float64, bool) {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}

func sum(m *dto.Metric) (float64, bool) {
	switch {
	case m.Histogram != nil:
		return m.Histogram.GetSampleSum(), true
	case m.Summary != nil:
		return m.Summary.GetSampleSum(), true
	}
	return 0, false
}

func count(m *dto.Metric) (float64, bool) {
	switch {
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount()), true
	case m.Summary != nil:
		return float64(m.Summary.GetSampleCount()), true
	}
	return 0, false
}

func TestParseMetricsReadsSeriesWithAndWithoutLabels(t *testing.T) {
	text := `# HELP go_gc_heap_live_bytes Heap memory occupied by live objects.
# TYPE go_gc_heap_live_bytes gauge
go_gc_heap_live_bytes 3.526311768e+09
go_gc_heap_live_bytes_total 7
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",resource="pods",verb="POST"} 12
apiserver_request_total{code="201",resource="secrets",verb="POST"} 3
apiserver_request_total_other{verb="POST"} 99
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{resource="pods",verb="POST",le="0.1"} 10
apiserver_request_duration_seconds_bucket{resource="pods",verb="POST",le="+Inf"} 12
apiserver_request_duration_seconds_sum{resource="pods",verb="POST"} 0.75
apiserver_request_duration_seconds_count{resource="pods",verb="POST"} 12
`
	m, err := parseMetrics(text, "go_gc_heap_live_bytes", "apiserver_request_total", "apiserver_request_duration_seconds_sum")
	require.NoError(t, err)
	require.Len(t, m["go_gc_heap_live_bytes"], 1)
	assert.Equal(t, 3.526311768e9, m["go_gc_heap_live_bytes"][0].value)
	require.Len(t, m["apiserver_request_total"], 2)
	byResource := map[string]float64{}
	for _, s := range m["apiserver_request_total"] {
		byResource[s.label("resource")] = s.value
	}
	assert.Equal(t, map[string]float64{"pods": 12, "secrets": 3}, byResource)
	require.Len(t, m["apiserver_request_duration_seconds_sum"], 1)
	assert.Equal(t, 0.75, m["apiserver_request_duration_seconds_sum"][0].value)
	assert.Equal(t, "POST", m["apiserver_request_duration_seconds_sum"][0].label("verb"))
	assert.Len(t, m, 3, "only the series asked for")

	_, err = parseMetrics("go_gc_heap_live_bytes many\n", "go_gc_heap_live_bytes")
	assert.Error(t, err, "a value that is not a number")
}
