package test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/restoregraph/restoregraph/test/harness"
)

// sample is one series of a counter the API server exposes: its labels as the text
// format writes them (name="value",...), and its value.
type sample struct {
	labels string
	value  float64
}

// label returns the value of the label called name, or "".
func (s sample) label(name string) string {
	_, after, ok := strings.Cut(s.labels, name+`="`)
	if !ok {
		return ""
	}
	value, _, _ := strings.Cut(after, `"`)
	return value
}

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
// format, by metric.
func parseMetrics(text string, metrics ...string) (map[string][]sample, error) {
	out := map[string][]sample{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		// name{labels} value, or name value for a series without labels.
		name, labels, value := line, "", ""
		if i := strings.IndexByte(line, '{'); i >= 0 {
			end := strings.LastIndexByte(line, '}')
			if end < i {
				continue
			}
			name, labels, value = line[:i], line[i+1:end], line[end+1:]
		} else if name, value, _ = strings.Cut(line, " "); value == "" {
			continue
		}
		if !slices.Contains(metrics, name) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", line, err)
		}
		out[name] = append(out[name], sample{labels: labels, value: v})
	}
	return out, nil
}

func TestParseMetricsReadsSeriesWithAndWithoutLabels(t *testing.T) {
	text := `# HELP go_gc_heap_live_bytes Heap memory occupied by live objects.
# TYPE go_gc_heap_live_bytes gauge
go_gc_heap_live_bytes 3.526311768e+09
go_gc_heap_live_bytes_total 7
apiserver_request_total{code="201",resource="pods",verb="POST"} 12
apiserver_request_total{code="201",resource="secrets",verb="POST"} 3
apiserver_request_total_other{verb="POST"} 99
`
	m, err := parseMetrics(text, "go_gc_heap_live_bytes", "apiserver_request_total")
	require.NoError(t, err)
	assert.Equal(t, []sample{{value: 3.526311768e9}}, m["go_gc_heap_live_bytes"])
	require.Len(t, m["apiserver_request_total"], 2)
	assert.Equal(t, "pods", m["apiserver_request_total"][0].label("resource"))
	assert.Equal(t, 3.0, m["apiserver_request_total"][1].value)
	assert.Len(t, m, 2, "only the series asked for")

	_, err = parseMetrics("go_gc_heap_live_bytes many\n", "go_gc_heap_live_bytes")
	assert.Error(t, err, "a value that is not a number")
}
