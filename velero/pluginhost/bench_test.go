package pluginhost

import (
	"bytes"
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	riav2 "github.com/restoregraph/restoregraph/plugin/restoreitemaction/v2"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero/internal/testbin"
)

// annotate is the in-process twin of the test plugins' example.io/annotate-all.
type annotate struct{}

func (annotate) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"*"}}, nil
}

func (annotate) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	u := in.Item.DeepCopy()
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann["example.io/seen"] = "yes"
	u.SetAnnotations(ann)
	return ria.NewExecuteOutput(u), nil
}

// only returns the registry of one plugin of the test binary.
func only(b *testing.B, h *Host, name string) *plugin.Registry {
	bin := testbin.Plugins(b)
	plugins, err := h.Discover(context.Background(), []string{bin})
	if err != nil {
		b.Fatal(err)
	}
	var reg plugin.Registry
	for _, p := range plugins {
		if p.Name == name {
			if err := h.Register(&reg, []Plugin{p}); err != nil {
				b.Fatal(err)
			}
		}
	}
	return &reg
}

// BenchmarkCall: one Execute on a ConfigMap, in process and through a plugin process.
func BenchmarkCall(b *testing.B) {
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "shop", "labels": map[string]any{"app": "web"}},
		"data":     map[string]any{"mode": "production"}}}
	in := &ria.ExecuteInput{Item: cm, ItemFromBackup: cm, Restore: &ria.Restore{Name: "bench"}}
	h := &Host{}
	defer h.Close()
	var inProcess plugin.Registry
	if err := inProcess.Register("annotate", plugin.V1, annotate{}); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		reg  *plugin.Registry
	}{{"in-process", &inProcess}, {"out-of-process", only(b, h, "example.io/annotate-all")}} {
		b.Run(tc.name, func(b *testing.B) {
			actions, err := tc.reg.Actions()
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := riav2.Execute(context.Background(), actions[0].RestoreItemAction, in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
		})
	}
}

// BenchmarkRestoreWithPlugin restores the Cluster API fleet of the bench package (20
// clusters, 5 ms per request) without plugins and with one out-of-process plugin on
// every object, in the same run.
func BenchmarkRestoreWithPlugin(b *testing.B) {
	var buf bytes.Buffer
	if err := workload.CAPI(workload.CAPIOptions{Clusters: 20, Seed: 1}).Write(&buf); err != nil {
		b.Fatal(err)
	}
	backup, err := archive.Read(context.Background(), bytes.NewReader(buf.Bytes()), archive.Options{})
	if err != nil {
		b.Fatal(err)
	}
	h := &Host{}
	defer h.Close()
	withPlugin := only(b, h, "example.io/annotate-all")
	var plain, plugged time.Duration
	for b.Loop() {
		for _, tc := range []struct {
			reg  *plugin.Registry
			took *time.Duration
		}{{nil, &plain}, {withPlugin, &plugged}} {
			s, err := memcluster.StartServer(memcluster.Options{GC: true, EstablishDelay: 100 * time.Millisecond,
				Latency: memcluster.UniformLatency(1, 2500*time.Microsecond, 7500*time.Microsecond)})
			if err != nil {
				b.Fatal(err)
			}
			tgt, err := restore.NewTarget(s.Config())
			if err != nil {
				b.Fatal(err)
			}
			rep, err := restore.Run(context.Background(), backup, tgt, restore.PlanOptions{Extensions: restore.Extensions{Plugins: tc.reg}}, restore.RunOptions{Workers: 16})
			if err != nil || !rep.OK() {
				b.Fatal(err, rep.Summary)
			}
			*tc.took += rep.Finished.Sub(rep.Started)
			s.Close()
		}
	}
	n := float64(backup.Manifest().Len() * b.N)
	b.ReportMetric(n/plain.Seconds(), "plain-objects/s")
	b.ReportMetric(n/plugged.Seconds(), "plugin-objects/s")
	b.ReportMetric(plain.Seconds()/plugged.Seconds(), "plugin/plain")
}
