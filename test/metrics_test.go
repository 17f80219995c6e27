package test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

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
	out := map[string][]sample{}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		name, _, ok := strings.Cut(line, "{")
		end := strings.LastIndexByte(line, '}')
		if !ok || end < 0 || !slices.Contains(metrics, name) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", line, err)
		}
		out[name] = append(out[name], sample{labels: line[len(name)+1 : end], value: v})
	}
	return out, nil
}
