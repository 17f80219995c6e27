package restore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"github.com/restoregraph/restoregraph/restore"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Plan, review, apply: the plan is saved, read back (by a person, a policy check, another
// process) and applied as it was saved. Applying refuses, with what changed, when the
// backup or the target is no longer what was planned.
func Example() {
	var tarball bytes.Buffer
	workload.CAPI(workload.CAPIOptions{Clusters: 2, Seed: 1}).Write(&tarball)
	backup, err := archive.Read(context.Background(), &tarball, archive.Options{})
	if err != nil {
		panic(err)
	}
	defer backup.Close()
	cfg, stop, err := memcluster.Start(memcluster.Options{GC: true})
	if err != nil {
		panic(err)
	}
	defer stop()
	target, err := restore.NewTarget(cfg)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	plan, err := restore.NewPlan(ctx, backup, target, restore.PlanOptions{BackupName: "capi"})
	if err != nil {
		panic(err)
	}
	var saved bytes.Buffer
	if err := plan.WriteJSON(&saved); err != nil {
		panic(err)
	}

	reviewed, err := restore.ReadPlan(&saved)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(reviewed.Objects), "objects planned from", reviewed.Backup.Name)
	plan, err = reviewed.Open(ctx, backup, target, restore.Extensions{})
	var changed *restore.PlanChangedError
	if errors.As(err, &changed) {
		fmt.Println("not the plan that was reviewed:", changed.Changes)
		return
	} else if err != nil {
		panic(err)
	}
	report, err := restore.Apply(ctx, plan, target, restore.RunOptions{Workers: 8})
	if err != nil {
		panic(err)
	}
	fmt.Println(report.Count(restore.Restored), "restored,", report.Count(restore.Failed), "failed, all well:", report.OK())
	// Output:
	// 95 objects planned from capi
	// 95 restored, 0 failed, all well: true
}

// objects is a backup held in memory: the manifest a backup tool builds while it reads
// objects, and their bodies. It is all a restore needs; no tarball is involved.
type objects struct {
	m      *manifest.Manifest
	bodies map[manifest.ID][]byte
}

func (o objects) Manifest() *manifest.Manifest { return o.m }

func (o objects) Body(gr schema.GroupResource, _, namespace, name string) ([]byte, error) {
	return o.bodies[manifest.ID{Group: gr.Group, Resource: gr.Resource, Namespace: namespace, Name: name}], nil
}

// A backup built from live objects with manifest.Builder restores like a tarball.
func ExampleApply_fromObjects() {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
	live := []map[string]any{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "ns-1"}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "settings", "namespace": "shop", "uid": "cm-1"}},
		{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "token", "namespace": "shop", "uid": "s-1",
			"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "settings", "uid": "cm-1"}}}},
	}
	b := manifest.NewBuilder(mapper)
	backup := objects{m: b.Manifest(), bodies: map[manifest.ID][]byte{}}
	for _, obj := range live {
		u := &unstructured.Unstructured{Object: obj}
		if err := b.Add(u); err != nil {
			panic(err)
		}
		mapping, _ := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), "v1")
		id := manifest.ID{Resource: mapping.Resource.Resource, Namespace: u.GetNamespace(), Name: u.GetName()}
		backup.bodies[id], _ = json.Marshal(obj)
	}

	cfg, stop, err := memcluster.Start(memcluster.Options{GC: true})
	if err != nil {
		panic(err)
	}
	defer stop()
	target, err := restore.NewTarget(cfg)
	if err != nil {
		panic(err)
	}
	plan, err := restore.NewPlan(context.Background(), backup, target, restore.PlanOptions{})
	if err != nil {
		panic(err)
	}
	report, err := restore.Apply(context.Background(), plan, target, restore.RunOptions{})
	if err != nil {
		panic(err)
	}
	newUID := map[string]types.UID{}
	for o := range report.Objects() {
		fmt.Println(o.Kind, o.Name, o.Status)
		newUID[o.Name] = o.NewUID
	}
	secret, err := target.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).
		Namespace("shop").Get(context.Background(), "token", metav1.GetOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println("the Secret's owner is the restored ConfigMap:", secret.GetOwnerReferences()[0].UID == newUID["settings"])
	// Output:
	// Namespace shop Restored
	// ConfigMap settings Restored
	// Secret token Restored
	// the Secret's owner is the restored ConfigMap: true
}

// stamp is a backup tool's own restore item action: it labels what it restores.
type stamp struct{}

func (stamp) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"configmaps"}}, nil
}

func (stamp) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	if in.Item.GetNamespace() == "fleet-01" && in.Item.GetName() == "calico-addon" {
		return nil, errors.New("refused by policy")
	}
	labels := in.Item.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["restored-by"] = "my-backup-tool"
	in.Item.SetLabels(labels)
	return ria.NewExecuteOutput(in.Item), nil
}

// Embedded in a backup tool: its own logger (log/slog), its own plugin, progress events,
// and each failure as a typed error.
func Example_embedded() {
	var tarball bytes.Buffer
	workload.CAPI(workload.CAPIOptions{Clusters: 2, Seed: 1}).Write(&tarball)
	backup, err := archive.Read(context.Background(), &tarball, archive.Options{})
	if err != nil {
		panic(err)
	}
	defer backup.Close()
	cfg, stop, err := memcluster.Start(memcluster.Options{GC: true})
	if err != nil {
		panic(err)
	}
	defer stop()
	target, err := restore.NewTarget(cfg)
	if err != nil {
		panic(err)
	}

	var plugins plugin.Registry
	if err := plugins.Register("example.io/stamp", plugin.V1, stamp{}); err != nil {
		panic(err)
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var done int
	report, err := restore.Run(context.Background(), backup, target,
		restore.PlanOptions{BackupName: "nightly", Extensions: restore.Extensions{Plugins: &plugins}},
		restore.RunOptions{Logger: logger, OnEvent: func(ev restore.Event) {
			if ev.Type == restore.EventSucceeded {
				done++ // a progress bar would move here
			}
		}})
	if err != nil {
		panic(err)
	}
	for o := range report.Objects() {
		var pe *restore.PluginError
		if errors.As(o.Err, &pe) {
			fmt.Printf("%s %s: plugin %s failed: %v\n", o.Kind, o.Name, pe.Plugin, pe.Err)
		}
	}
	fmt.Println(done, "done;", report.Count(restore.Failed), "failed,", report.Count(restore.Skipped), "skipped;",
		strings.Count(logs.String(), `"level":"WARN"`), "warning logged")
	// Output:
	// ConfigMap calico-addon: plugin example.io/stamp failed: refused by policy
	// 94 done; 1 failed, 0 skipped; 1 warning logged
}
