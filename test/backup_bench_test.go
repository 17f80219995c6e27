package test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/restoregraph/restoregraph/backup"
	"github.com/restoregraph/restoregraph/filter"
)

const backupObjects = 10_000

// backupNamespace is made once per test binary: 10,000 ConfigMaps of 1 KiB each.
var backupNamespace = sync.OnceValue(func() error {
	c := cfg()
	c.QPS, c.Burst = -1, 0 // unthrottled
	dyn, err := dynamic.NewForConfig(c)
	if err != nil {
		return err
	}
	ctx := context.Background()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "bench-backup"}}}
	if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	cms := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("bench-backup")
	payload := strings.Repeat("x", 1024)
	var g errgroup.Group
	g.SetLimit(16)
	for i := range backupObjects {
		g.Go(func() error {
			cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": fmt.Sprintf("cm-%05d", i), "labels": map[string]any{"app": "bench"}},
				"data":     map[string]any{"payload": payload}}}
			_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
			return err
		})
	}
	return g.Wait()
})

// BenchmarkIntegrationBackup backs up a namespace of 10,000 ConfigMaps from the real API
// server, unthrottled, and compares it, in the same run, with the plain paged list of
// those ConfigMaps (the ceiling: no backup reads less than that): objects per second and
// the ratio. The backup lists every resource the server serves in the namespace, at
// every version, writes the manifest and the tarball (to io.Discard) as it would a file.
func BenchmarkIntegrationBackup(b *testing.B) {
	if err := backupNamespace(); err != nil {
		b.Fatal(err)
	}
	c := cfg()
	c.QPS, c.Burst = -1, 0
	dyn, err := dynamic.NewForConfig(c)
	if err != nil {
		b.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(c)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var backupT, listT time.Duration
	for b.Loop() {
		start := time.Now()
		res, err := backup.Run(ctx, backup.Source{Dynamic: dyn, Discovery: disc}, io.Discard,
			backup.Options{Filter: filter.Spec{IncludeNamespaces: []string{"bench-backup"}}, SpillDir: b.TempDir()})
		if err != nil || len(res.Incomplete) > 0 {
			b.Fatalf("%v %v", err, res.Incomplete)
		}
		if res.Objects < backupObjects {
			b.Fatalf("%d objects backed up", res.Objects)
		}
		backupT += time.Since(start)

		start = time.Now()
		n, cont := 0, ""
		for {
			page, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("bench-backup").
				List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
			if err != nil {
				b.Fatal(err)
			}
			n += len(page.Items)
			if cont = page.GetContinue(); cont == "" {
				break
			}
		}
		listT += time.Since(start)
	}
	rate := func(d time.Duration) float64 { return float64(backupObjects*b.N) / d.Seconds() }
	b.ReportMetric(rate(backupT), "backup-objects/s")
	b.ReportMetric(rate(listT), "list-objects/s")
	b.ReportMetric(rate(backupT)/rate(listT), "backup/list")
}
