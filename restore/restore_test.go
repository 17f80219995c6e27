package restore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/graph"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"github.com/restoregraph/restoregraph/scheduler"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

func capiBackup(t testing.TB, clusters int) *archive.Backup {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, workload.CAPI(workload.CAPIOptions{Clusters: clusters, Seed: 1}).Write(&buf))
	b, err := archive.Read(context.Background(), &buf, archive.Options{})
	require.NoError(t, err)
	return b
}

// backupOf writes objs into a backup in memory, each under its kind's plural (a
// Namespace, Pod or ConfigMap), and reads it back.
func backupOf(t testing.TB, objs ...map[string]any) *archive.Backup {
	t.Helper()
	var buf bytes.Buffer
	w, err := archive.NewWriter(&buf, archive.Format11)
	require.NoError(t, err)
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o}
		require.NoError(t, w.Add(u, strings.ToLower(u.GetKind())+"s", true))
	}
	require.NoError(t, w.Close())
	b, err := archive.Read(context.Background(), &buf, archive.Options{})
	require.NoError(t, err)
	return b
}

func cluster(t testing.TB, opts memcluster.Options) (*memcluster.Server, Target) {
	t.Helper()
	s, err := memcluster.StartServer(opts)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	tgt, err := NewTarget(s.Config())
	require.NoError(t, err)
	return s, tgt
}

// without removes the named step from the pipeline.
func without(name StepName) func([]Step) []Step {
	return func(steps []Step) []Step {
		return slices.DeleteFunc(steps, func(s Step) bool { return s.Name == name })
	}
}

func openJournal(t testing.TB, path string) *FileJournal {
	t.Helper()
	j, err := OpenJournal(path)
	require.NoError(t, err)
	return j
}

var fastRetry = wait.Backoff{Duration: 5 * time.Millisecond, Factor: 2, Cap: 100 * time.Millisecond, Steps: 1 << 30}

// assertComplete checks, with Verify, that the target holds everything the restore of
// the backup makes, as it makes it, with every ownerReference live.
func assertComplete(t *testing.T, tgt Target, b *archive.Backup) {
	t.Helper()
	rep, err := verifyAll(context.Background(), tgt, b, testOptions{Retry: fastRetry})
	require.NoError(t, err)
	for _, o := range rep.Objects {
		assert.Equal(t, Verified, o.Verdict, "%s %s/%s: %v", o.Kind, o.Namespace, o.Name, o.Problems)
	}
	assert.Len(t, rep.Objects, b.Manifest().Len())
}

// assertOrder checks that every object was created after its dependencies were ready.
func assertOrder(t *testing.T, rep *Report, p *Plan) {
	t.Helper()
	byUID := map[types.UID]ObjectResult{}
	for o := range rep.Objects() {
		byUID[o.UID] = o
	}
	for po := range p.Objects() {
		o := byUID[po.UID]
		for _, d := range po.DependsOn {
			dep := byUID[d.UID]
			assert.False(t, o.Created.Before(dep.Ready), "%s %s was created before %s %s was ready (%s)", o.Kind, o.Name, dep.Kind, dep.Name, d.Reason)
		}
	}
}

func TestReportListsEveryObjectOnce(t *testing.T) {
	b := capiBackup(t, 1)
	_, cfg := cluster(t, memcluster.Options{})
	rep, err := restoreAll(context.Background(), cfg, b, testOptions{Retry: fastRetry})
	require.NoError(t, err)
	objects := slices.Collect(rep.Objects())
	require.Len(t, objects, rep.Len())
	assert.Equal(t, b.Manifest().Len(), rep.Len())
	seen, total := map[types.UID]bool{}, 0
	for _, o := range objects {
		assert.False(t, seen[o.UID], "%s %s listed twice", o.Kind, o.Name)
		seen[o.UID] = true
		assert.Equal(t, Restored, o.Status, "%s %s", o.Kind, o.Name)
		assert.NotEmpty(t, o.NewUID)
		assert.False(t, o.Created.Before(o.Started) || o.Ended.Before(o.Created), "%s %s: started %s, created %s, ended %s", o.Kind, o.Name, o.Started, o.Created, o.Ended)
	}
	for _, n := range rep.Summary {
		total += n
	}
	assert.Equal(t, rep.Len(), total, "the summary counts every object")

	js, err := json.Marshal(rep)
	require.NoError(t, err)
	indented, err := json.MarshalIndent(rep, "", "  ")
	require.NoError(t, err)
	var written bytes.Buffer
	require.NoError(t, rep.WriteJSON(&written))
	assert.Equal(t, string(indented)+"\n", written.String(), "WriteJSON writes what MarshalIndent makes")
	var decoded struct {
		Objects []ObjectResult `json:"objects"`
		Summary map[Status]int `json:"summary"`
	}
	require.NoError(t, json.Unmarshal(js, &decoded))
	assert.Equal(t, rep.Summary, decoded.Summary)
	require.Len(t, decoded.Objects, len(objects), "the JSON lists the objects")
	for i, o := range decoded.Objects {
		assert.Equal(t, objects[i].ObjectRef, o.ObjectRef)
		assert.Equal(t, objects[i].NewUID, o.NewUID)
		assert.True(t, objects[i].Created.Equal(o.Created), "%s %s", o.Kind, o.Name)
	}
}

// inProcess is tgt with its creates handed to s in this process (Target.creator).
func inProcess(s *memcluster.Server, tgt Target) Target {
	tgt.creator = s
	return tgt
}

func TestCAPIRestoreLosesNothingToTheGarbageCollector(t *testing.T) {
	b := capiBackup(t, 3)
	gcOpts := memcluster.Options{GC: true, GCDelay: 30 * time.Millisecond, EstablishDelay: 20 * time.Millisecond}
	ctx := context.Background()

	for _, inProc := range []bool{false, true} {
		t.Run(fmt.Sprintf("in-process=%t", inProc), func(t *testing.T) {
			srv, cfg := cluster(t, gcOpts)
			if inProc {
				cfg = inProcess(srv, cfg)
			}
			rep, err := restoreAll(ctx, cfg, b, testOptions{Workers: 8, Retry: fastRetry})
			require.NoError(t, err)
			require.True(t, rep.OK(), "summary %v, first failure: %v", rep.Summary, firstFailure(rep))
			assert.Equal(t, b.Manifest().Len(), rep.Count(Restored))
			p, err := planAll(ctx, cfg, b, testOptions{})
			require.NoError(t, err)
			assertOrder(t, rep, p)
			time.Sleep(10 * gcOpts.GCDelay) // let the collector act
			assertComplete(t, cfg, b)
			assert.Zero(t, srv.Collected(), "the collector deleted nothing restoregraph restored")
		})
	}

	naiveSrv, naiveCfg := cluster(t, gcOpts)
	_, err := restoreAll(ctx, naiveCfg, b, testOptions{Workers: 8, Steps: without(StepRemapOwners), Retry: fastRetry})
	require.NoError(t, err)
	// Wait until the collector has acted and then stayed still for three of its periods.
	last, still := -1, 0
	for deadline := time.Now().Add(10 * time.Second); still < 3 && time.Now().Before(deadline); {
		time.Sleep(gcOpts.GCDelay)
		if n := naiveSrv.Collected(); n > 0 && n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	naive, err := verifyAll(context.Background(), naiveCfg, b, testOptions{})
	require.NoError(t, err)
	lost := naive.Summary[Missing]
	t.Logf("objects in the backup: %d; lost to the garbage collector with owner references copied verbatim: %d (restoregraph: none, above)",
		b.Manifest().Len(), lost)
	assert.Positive(t, lost, "the naive restore loses objects to the collector")
	assert.Equal(t, lost, naiveSrv.Collected())
}

func firstFailure(rep *Report) string {
	for o := range rep.Objects() {
		if o.Status == Failed || o.Status == Cancelled {
			return o.Kind + " " + o.Namespace + "/" + o.Name + ": " + o.Reason
		}
	}
	return ""
}

func TestCRDsBeforeTheirResources(t *testing.T) {
	b := capiBackup(t, 1)
	_, cfg := cluster(t, memcluster.Options{EstablishDelay: 150 * time.Millisecond})
	rep, err := restoreAll(context.Background(), cfg, b, testOptions{Workers: 16, Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", firstFailure(rep))
	var crdReady time.Time
	for o := range rep.Objects() {
		if o.Kind == "CustomResourceDefinition" && o.Ready.After(crdReady) {
			crdReady = o.Ready
		}
	}
	for o := range rep.Objects() {
		if o.Group == "" || o.Group == "apiextensions.k8s.io" {
			continue
		}
		assert.Equal(t, workload.CAPIVersions[0], o.Version, "%s restored at the chosen version", o.Kind)
		assert.Zero(t, o.Retries, "%s %s never had to retry: it waited for its CRD", o.Kind, o.Name)
	}
	assert.False(t, crdReady.IsZero())
}

func TestTransientFaults(t *testing.T) {
	b := capiBackup(t, 2)
	faults := &memcluster.Faults{Seed: 7, TooManyRequests: 0.03, InternalError: 0.03, Timeout: 0.02, TimeoutAfter: 5 * time.Millisecond, LostResponse: 0.02}
	_, cfg := cluster(t, memcluster.Options{Faults: faults})
	rep, err := restoreAll(context.Background(), cfg, b, testOptions{Workers: 8, Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", firstFailure(rep))
	retries := 0
	for o := range rep.Objects() {
		retries += o.Retries
	}
	t.Logf("%d faults injected, %d retries", faults.Injected(), retries)
	assert.Positive(t, faults.Injected())
	assert.Positive(t, retries)
	assertComplete(t, cfg, b)
}

// failOn is a plugin that fails for the objects of one kind and name.
type failOn struct{ kind, name string }

func (f failOn) AppliesTo() (ria.ResourceSelector, error) { return ria.ResourceSelector{}, nil }
func (f failOn) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	if in.Item.GetKind() == f.kind && in.Item.GetName() == f.name {
		return nil, errors.New("permanent failure")
	}
	return ria.NewExecuteOutput(in.Item), nil
}

// restoreFailingControlPlane restores two Cluster API clusters, the first one's
// KubeadmControlPlane failing for good.
func restoreFailingControlPlane(t *testing.T) *Report {
	t.Helper()
	b := capiBackup(t, 2)
	_, cfg := cluster(t, memcluster.Options{})
	var reg plugin.Registry
	require.NoError(t, reg.Register("fail", plugin.V1, failOn{"KubeadmControlPlane", "workload-00-control-plane"}))
	rep, err := restoreAll(context.Background(), cfg, b, testOptions{Plugins: &reg, Retry: fastRetry})
	require.NoError(t, err)
	return rep
}

func TestPermanentFailureSkipsOnlyDescendants(t *testing.T) {
	rep := restoreFailingControlPlane(t)
	assert.Equal(t, 1, rep.Count(Failed))
	var kcpUID types.UID
	for o := range rep.Objects() {
		if o.Status == Failed {
			kcpUID = o.UID
		}
	}
	skipped := 0
	for o := range rep.Objects() {
		switch {
		case o.Status == Skipped:
			skipped++
			assert.Equal(t, "fleet-00", o.Namespace)
			assert.Equal(t, kcpUID, o.BlockedBy[0], "the chain starts at the failed object")
			assert.Equal(t, o.UID, o.BlockedBy[len(o.BlockedBy)-1])
		case o.Namespace == "fleet-01":
			assert.Equal(t, Restored, o.Status, "an independent branch goes on")
		}
	}
	// 4 control-plane secrets, and per control-plane machine: the machine, its config,
	// its infrastructure machine and its bootstrap secret.
	assert.Equal(t, 4+3*4, skipped)
}

// Unusual yields what Objects yields of the objects not simply restored, in the same
// order, and nothing of the others.
func TestUnusualIsWhatWasNotSimplyRestored(t *testing.T) {
	rep := restoreFailingControlPlane(t)
	var want []ObjectResult
	restored := 0
	for o := range rep.Objects() {
		if o.Status == Restored && o.Reason == "" && o.Err == nil && o.SkippedBy == "" && len(o.BlockedBy) == 0 &&
			len(o.Warnings) == 0 && len(o.Modifiers) == 0 && len(o.Operations) == 0 && len(o.Hooks) == 0 {
			restored++
			continue
		}
		want = append(want, o)
	}
	got := slices.Collect(rep.Unusual())
	assert.Equal(t, want, got)
	assert.Len(t, got, 1+4+3*4, "the failed object and what it blocked")
	assert.Equal(t, rep.Len(), restored+len(got))
}

// What one object's restore recorded (its failure, its reason, its retries) is never
// another's: the state an object is restored with is used again for the next object.
func TestObjectResultsAreTheirOwn(t *testing.T) {
	b := capiBackup(t, 2)
	_, cfg := cluster(t, memcluster.Options{})
	var reg plugin.Registry
	require.NoError(t, reg.Register("fail", plugin.V1, failOn{"Cluster", "workload-01"}))
	rep, err := restoreAll(context.Background(), cfg, b, testOptions{Plugins: &reg, Retry: fastRetry, Workers: 1})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Count(Failed))
	for o := range rep.Objects() {
		switch o.Status {
		case Failed:
			assert.Contains(t, o.Reason, "permanent failure")
		case Skipped:
			assert.NotContains(t, o.Reason, "permanent failure", "%s %s", o.Kind, o.Name)
		default:
			assert.Empty(t, o.Reason, "%s %s", o.Kind, o.Name)
			assert.NoError(t, o.Err, "%s %s", o.Kind, o.Name)
			assert.Empty(t, o.Warnings, "%s %s", o.Kind, o.Name)
			assert.Empty(t, o.Operations, "%s %s", o.Kind, o.Name)
		}
		assert.False(t, o.Ended.Before(o.Started), "%s %s", o.Kind, o.Name)
	}
}

func TestResumeAfterCancellation(t *testing.T) {
	b := capiBackup(t, 2)
	total := int64(b.Manifest().Len())
	for _, stopAfter := range []int64{1, total / 3, total - 5} {
		_, cfg := cluster(t, memcluster.Options{GC: true, GCDelay: 30 * time.Millisecond})
		path := t.TempDir() + "/journal"
		journal := openJournal(t, path)
		ctx, cancel := context.WithCancel(context.Background())
		var done atomic.Int64
		rep, err := restoreAll(ctx, cfg, b, testOptions{Workers: 4, Journal: journal, Retry: fastRetry, OnEvent: func(ev Event) {
			if ev.Type == EventSucceeded && done.Add(1) == stopAfter {
				cancel()
			}
		}})
		cancel()
		require.ErrorIs(t, err, context.Canceled, "stopped after %d", stopAfter)
		require.NotNil(t, rep)
		require.NoError(t, journal.Close())

		journal = openJournal(t, path)
		defer journal.Close()
		rep, err = restoreAll(context.Background(), cfg, b, testOptions{Workers: 4, Journal: journal, Retry: fastRetry})
		require.NoError(t, err)
		require.True(t, rep.OK(), "%v", firstFailure(rep))
		fromJournal := 0
		for o := range rep.Objects() {
			if o.FromJournal {
				fromJournal++
			}
		}
		assert.Positive(t, fromJournal, "the second run took what the first restored from the journal")
		time.Sleep(300 * time.Millisecond)
		assertComplete(t, cfg, b)
	}
}

func TestResumeWithoutJournal(t *testing.T) {
	b := capiBackup(t, 1)
	_, cfg := cluster(t, memcluster.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var done atomic.Int64
	restoreAll(ctx, cfg, b, testOptions{Workers: 2, Retry: fastRetry, OnEvent: func(ev Event) {
		if ev.Type == EventSucceeded && done.Add(1) == 10 {
			cancel()
		}
	}})
	rep, err := restoreAll(context.Background(), cfg, b, testOptions{Existing: Fail, Retry: fastRetry})
	require.NoError(t, err)
	assert.True(t, rep.OK(), "objects of the first run are recognised by their annotation, even with Existing=Fail: %v", firstFailure(rep))
	assert.Zero(t, rep.Count(Adopted))
	assertComplete(t, cfg, b)
}

// With the update policy, what the target will not change in place is left as it is
// and labelled by the restore, with the refusal as a warning, as Velero's restore does:
// a scheduled Pod whose spec differs from the backup's beyond its images. One that
// differs only by the node it was scheduled to is updated, keeping its node.
func TestUpdateLeavesWhatTheTargetWillNotChange(t *testing.T) {
	pod := func(name, env string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "namespace": "shop", "uid": "uid-" + name},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox:1.37",
				"env": []any{map[string]any{"name": "MODE", "value": env}}}}}}
	}
	b := backupOf(t, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "uid-ns"}},
		pod("same", "backup"), pod("changed", "backup"))
	_, tgt := cluster(t, memcluster.Options{})
	ctx := context.Background()
	pods := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("shop")
	_, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx,
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for name, env := range map[string]string{"same": "backup", "changed": "target"} {
		p := pod(name, env)
		p["spec"].(map[string]any)["nodeName"] = "node-a"
		delete(p["metadata"].(map[string]any), "uid")
		_, err := pods.Create(ctx, &unstructured.Unstructured{Object: p}, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	rep, err := restoreAll(ctx, tgt, b, testOptions{Existing: Update, Retry: fastRetry, BackupName: "nightly"})
	require.NoError(t, err)
	require.True(t, rep.OK(), "summary %v, first failure: %v", rep.Summary, firstFailure(rep))
	results := map[string]ObjectResult{}
	for o := range rep.Objects() {
		results[o.Name] = o
	}
	assert.Equal(t, Updated, results["same"].Status)
	assert.Equal(t, Adopted, results["changed"].Status)
	require.Len(t, results["changed"].Warnings, 1)
	assert.Contains(t, results["changed"].Warnings[0], "not updated, left as it is")
	assert.Contains(t, results["changed"].Warnings[0], "pod updates may not change fields other than")
	for name, env := range map[string]string{"same": "backup", "changed": "target"} {
		got, err := pods.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		node, _, _ := unstructured.NestedString(got.Object, "spec", "nodeName")
		assert.Equal(t, "node-a", node, "%s keeps its node", name)
		containers, _, _ := unstructured.NestedSlice(got.Object, "spec", "containers")
		assert.Equal(t, env, containers[0].(map[string]any)["env"].([]any)[0].(map[string]any)["value"], name)
		assert.Equal(t, "nightly", got.GetLabels()[BackupNameLabel], "%s is labelled by the restore", name)
		assert.NotEmpty(t, got.GetLabels()[RestoreNameLabel], name)
	}
}

func TestExistingPolicies(t *testing.T) {
	b := capiBackup(t, 1)
	for _, policy := range []Existing{Adopt, Update, Fail, Update + " in-process"} {
		t.Run(string(policy), func(t *testing.T) {
			s, cfg := cluster(t, memcluster.Options{})
			if policy == Update+" in-process" {
				// What the server refused is sent again, as the update.
				policy, cfg = Update, inProcess(s, cfg)
			}
			dyn := cfg.Dynamic
			ctx := context.Background()
			ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "fleet-00"}}}
			_, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, metav1.CreateOptions{})
			require.NoError(t, err)
			pre := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "workload-00-kubeconfig", "namespace": "fleet-00"},
				"data": map[string]any{"value": "b3RoZXI="}}}
			secrets := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace("fleet-00")
			existing, err := secrets.Create(ctx, pre, metav1.CreateOptions{})
			require.NoError(t, err)

			rep, err := restoreAll(ctx, cfg, b, testOptions{Existing: policy, Retry: fastRetry})
			require.NoError(t, err)
			got, _ := secrets.Get(ctx, "workload-00-kubeconfig", metav1.GetOptions{})
			var res ObjectResult
			for o := range rep.Objects() {
				if o.Name == "workload-00-kubeconfig" {
					res = o
				}
			}
			switch policy {
			case Adopt:
				assert.Equal(t, Adopted, res.Status)
				assert.Equal(t, existing.GetUID(), res.NewUID)
				assert.Equal(t, "b3RoZXI=", got.Object["data"].(map[string]any)["value"], "adopted objects are left as they were")
			case Update:
				assert.Equal(t, Updated, res.Status)
				assert.Equal(t, "a3ViZWNvbmZpZw==", got.Object["data"].(map[string]any)["value"])
				assert.Len(t, got.GetOwnerReferences(), 1, "the update carries the remapped owner")
			case Fail:
				// The Namespace existed too: it fails, and so everything in it is skipped.
				var nsRes ObjectResult
				for o := range rep.Objects() {
					if o.Kind == "Namespace" {
						nsRes = o
					}
				}
				assert.Equal(t, Failed, nsRes.Status)
				assert.Contains(t, nsRes.Reason, "already exists")
				assert.Equal(t, Skipped, res.Status)
				assert.Equal(t, nsRes.UID, res.BlockedBy[0])
				assert.Equal(t, "b3RoZXI=", got.Object["data"].(map[string]any)["value"], "nothing was changed")
			}
		})
	}
}

// needsConfigMap is a v2 plugin: a ClusterResourceSet asks for its ConfigMap first, and
// waits until the plugin says it is ready.
type needsConfigMap struct{ checks atomic.Int32 }

func (p *needsConfigMap) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"clusterresourcesets.addons.cluster.x-k8s.io"}}, nil
}
func (p *needsConfigMap) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	out := ria.NewExecuteOutput(in.Item).WithItemsWait()
	out.AdditionalItems = []ria.ResourceIdentifier{
		{GroupResource: schema.GroupResource{Resource: "configmaps"}, Namespace: in.Item.GetNamespace(), Name: "calico-addon"},
		{GroupResource: schema.GroupResource{Resource: "configmaps"}, Namespace: in.Item.GetNamespace(), Name: "not-in-backup"},
	}
	return out, nil
}
func (p *needsConfigMap) AreAdditionalItemsReady([]ria.ResourceIdentifier, *ria.Restore) (bool, error) {
	return p.checks.Add(1) >= 2, nil
}

func TestPluginAdditionalItems(t *testing.T) {
	b := capiBackup(t, 1)
	_, cfg := cluster(t, memcluster.Options{})
	var reg plugin.Registry
	p := &needsConfigMap{}
	require.NoError(t, reg.Register("crs", plugin.V2, p))
	rep, err := restoreAll(context.Background(), cfg, b, testOptions{Plugins: &reg, Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", firstFailure(rep))
	var cm, crs ObjectResult
	for o := range rep.Objects() {
		switch o.Name {
		case "calico-addon":
			cm = o
		case "calico":
			crs = o
		}
	}
	assert.False(t, crs.Created.Before(cm.Ready), "the additional item is restored first")
	assert.GreaterOrEqual(t, p.checks.Load(), int32(2), "and waited for")
	assert.Contains(t, crs.Warnings[0], "not-in-backup")
}

func TestPlanWritesNothing(t *testing.T) {
	b := capiBackup(t, 1)
	_, cfg := cluster(t, memcluster.Options{})
	p, err := planAll(context.Background(), cfg, b, testOptions{})
	require.NoError(t, err)
	assert.Equal(t, b.Manifest().Len(), p.Len())
	objects := slices.Collect(p.Objects())
	assert.Len(t, objects, p.Len(), "Objects yields Len objects")
	for _, o := range objects {
		ref, ok := p.Object(o.UID)
		require.True(t, ok, "%s %s", o.Kind, o.Name)
		assert.Equal(t, o.ObjectRef, ref, "Object finds what Objects lists")
	}
	_, ok := p.Object("not-in-the-backup")
	assert.False(t, ok)
	assert.NotEmpty(t, p.CriticalPath)
	var crd *VersionChoice
	for i, v := range p.Versions {
		if v.Resource == "clusters" {
			crd = &p.Versions[i]
		}
	}
	require.NotNil(t, crd)
	assert.Equal(t, "v1beta1", crd.Version)
	assert.Equal(t, "clusters.cluster.x-k8s.io", crd.TargetFromCRD, "the target will serve what the backup's CRD serves")
	assert.Contains(t, p.Warnings, "no readiness probe for Cluster.cluster.x-k8s.io: policy ReadyOnCreate")
	// What the restore does not take on is not warned about.
	namespaces, err := planAll(context.Background(), cfg, b, testOptions{Filter: filter.Spec{IncludeResources: []string{"namespaces"}}})
	require.NoError(t, err)
	for _, w := range namespaces.Warnings {
		assert.NotContains(t, w, "cluster.x-k8s.io", "a kind filtered out")
	}
	js, err := json.MarshalIndent(p, "", "  ")
	require.NoError(t, err)
	var written bytes.Buffer
	require.NoError(t, p.WriteJSON(&written))
	assert.Equal(t, string(js)+"\n", written.String(), "WriteJSON writes what JSON makes")
	for _, field := range []string{`"sourceVersions"`, `"targetVersions"`, `"dependsOn"`, `"reason"`, `"cycles"`, `"warnings"`} {
		assert.Contains(t, string(js), field)
	}
	var decoded struct {
		Objects      []PlannedObject `json:"objects"`
		CriticalPath []types.UID     `json:"criticalPath"`
	}
	require.NoError(t, json.Unmarshal(js, &decoded))
	assert.Equal(t, objects, decoded.Objects, "the JSON lists the objects, in order")
	assert.Equal(t, p.CriticalPath, decoded.CriticalPath)
	v, err := verifyAll(context.Background(), cfg, b, testOptions{})
	require.NoError(t, err)
	assert.Equal(t, p.Len(), v.Summary[Missing], "a plan creates nothing")
}

// labelStep is a step of the caller's own, run between two default steps.
func labelStep(ctx context.Context, o *Object) error {
	labels := o.Body.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["restored-by"] = "a-custom-step"
	o.Body.SetLabels(labels)
	return nil
}

// secretsFirst is a rule of the caller's own: every ConfigMap after every Secret of its
// namespace.
type secretsFirst struct{}

func (secretsFirst) Name() string { return "secrets-first" }
func (secretsFirst) AddEdges(b *graph.RuleBuilder) {
	secrets := map[string][]int{}
	for i, it := range b.Items() {
		if it.Resource == "secrets" {
			secrets[it.Namespace] = append(secrets[it.Namespace], i)
		}
	}
	for i, it := range b.Items() {
		if it.Resource == "configmaps" {
			for _, s := range secrets[it.Namespace] {
				b.Edge(s, i)
			}
		}
	}
}

func TestCallersStepsAndRules(t *testing.T) {
	b := capiBackup(t, 1)
	_, cfg := cluster(t, memcluster.Options{})
	opts := testOptions{Retry: fastRetry, Rules: []graph.Rule{secretsFirst{}}, Steps: func(steps []Step) []Step {
		i := slices.IndexFunc(steps, func(s Step) bool { return s.Name == StepSanitize })
		return slices.Insert(steps, i+1, Step{Name: "label", Run: labelStep})
	}}
	p, err := planAll(context.Background(), cfg, b, opts)
	require.NoError(t, err)
	reasons := map[string]bool{}
	for o := range p.Objects() {
		for _, d := range o.DependsOn {
			reasons[d.Reason] = true
		}
	}
	assert.True(t, reasons["secrets-first"] || reasons["namespace+secrets-first"], "the plan names the caller's rule: %v", reasons)

	rep, err := restoreAll(context.Background(), cfg, b, opts)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", firstFailure(rep))
	assertOrder(t, rep, p)
	list, err := cfg.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("fleet-00").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, list.Items)
	for _, cm := range list.Items {
		assert.Equal(t, "a-custom-step", cm.GetLabels()["restored-by"])
	}
}

// What the restore waits on starts first, everything else namespace by namespace: with
// one worker, the namespaces (each waited on until active) start before anything in
// them, and then each object started is, of those whose dependencies are restored, the
// first of the first namespace by name, in the backup's order within it. A Deployment,
// at the head of the longest chain, does not go ahead of a ConfigMap the backup lists
// before it, and a namespace's Pods go ahead of the next namespace's ConfigMaps.
func TestWaitsFirstThenNamespaceByNamespace(t *testing.T) {
	var buf bytes.Buffer
	_, err := workload.WriteShaped(&buf, 150, 1, workload.Shape{AppsPerNamespace: 3, ServiceEvery: 1})
	require.NoError(t, err)
	b, err := archive.Read(context.Background(), &buf, archive.Options{})
	require.NoError(t, err)
	_, cfg := cluster(t, memcluster.Options{})
	p, err := planAll(context.Background(), cfg, b, testOptions{})
	require.NoError(t, err)
	var started []*manifest.Item
	rep, err := restoreAll(context.Background(), cfg, b, testOptions{Workers: 1, Retry: fastRetry, OnEvent: func(ev Event) {
		if ev.Type == EventStarted {
			started = append(started, ev.Item)
		}
	}})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", firstFailure(rep))

	deps := map[types.UID][]types.UID{}
	for o := range p.Objects() {
		for _, d := range o.DependsOn {
			deps[o.UID] = append(deps[o.UID], d.UID)
		}
	}
	require.Len(t, started, len(b.Manifest().Items()))
	namespaces := map[string]bool{}
	for _, it := range b.Manifest().Items() {
		namespaces[it.Namespace] = true
	}
	require.Greater(t, len(namespaces), 2, "the backup spans namespaces")
	done := map[types.UID]bool{}
	for _, it := range started {
		var next *manifest.Item
		for _, c := range b.Manifest().Items() {
			if done[c.UID] || !allIn(deps[c.UID], done) {
				continue
			}
			if next == nil || c.Kind == "Namespace" && next.Kind != "Namespace" ||
				(c.Kind == "Namespace") == (next.Kind == "Namespace") && c.Namespace < next.Namespace {
				next = c
			}
		}
		require.Equal(t, next.Kind+" "+next.Namespace+"/"+next.Name, it.Kind+" "+it.Namespace+"/"+it.Name,
			"after %d objects", len(done))
		done[it.UID] = true
	}
}

func allIn(uids []types.UID, set map[types.UID]bool) bool {
	for _, u := range uids {
		if !set[u] {
			return false
		}
	}
	return true
}

func TestOutcomeKeepsWhatItIsGiven(t *testing.T) {
	now := time.Now()
	for _, res := range []ObjectResult{
		{NewUID: "0b5f8c1e-3f5a-4a4e-9a43-2d8f3c2f7b10", Status: Restored, Started: now, Created: now.Add(time.Millisecond), Retries: 2},
		{NewUID: "0B5F8C1E-3F5A-4A4E-9A43-2D8F3C2F7B10", Status: Adopted, FromJournal: true},
		// Forms uuid.Parse reads that are not the canonical one, kept as they were.
		{NewUID: "0b5f8c1e3f5a4a4e9a432d8f3c2f7b10", Status: Restored},
		{NewUID: "{0b5f8c1e-3f5a-4a4e-9a43-2d8f3c2f7b10}", Status: Restored},
		{NewUID: "urn:uuid:0b5f8c1e-3f5a-4a4e-9a43-2d8f3c2f7b10", Status: Restored},
		{NewUID: "0b5f8c1e-3f5a-4a4e-9a43-2d8f3c2f7b1g", Status: Restored},
		{NewUID: "uid-7", Status: "Mine", Warnings: []string{"w"}},
		{Status: Skipped, SkippedBy: "plugin", Reason: "asked to", BlockedBy: []types.UID{"a", "b"}, Waited: time.Second},
		{},
	} {
		o := outcomeOf(&res)
		got := o.result(res.ObjectRef)
		assert.Equal(t, res.NewUID, got.NewUID)
		assert.Equal(t, res.Status, got.Status)
		assert.Equal(t, res.Retries, got.Retries)
		assert.Equal(t, res.FromJournal, got.FromJournal)
		assert.Equal(t, res.Waited, got.Waited)
		assert.Equal(t, res.Warnings, got.Warnings)
		assert.Equal(t, res.Reason, got.Reason)
		assert.Equal(t, res.SkippedBy, got.SkippedBy)
		assert.Equal(t, res.BlockedBy, got.BlockedBy)
		for _, pair := range [][2]time.Time{{res.Started, got.Started}, {res.Created, got.Created}, {res.Ready, got.Ready}, {res.Ended, got.Ended}} {
			assert.True(t, pair[0].Equal(pair[1]), "%s became %s", pair[0], pair[1])
		}
	}
	var o outcome
	o.setNewUID("uid-7")
	o.setNewUID("0b5f8c1e-3f5a-4a4e-9a43-2d8f3c2f7b10")
	assert.Equal(t, types.UID("0b5f8c1e-3f5a-4a4e-9a43-2d8f3c2f7b10"), o.NewUID(), "a later UID replaces an earlier one")
	o.setStatus("Mine")
	o.setStatus(Failed)
	assert.Equal(t, Failed, o.Status(), "a later status replaces an earlier one")
	assert.LessOrEqual(t, unsafe.Sizeof(o), uintptr(72), "a run keeps one per object: a million of them")
}

// A panic in a step stops the restore: the code that panicked may have left what the
// other objects share half written. The object fails with what panicked and where,
// nothing new starts, and Apply returns the panic.
func TestPanicInAStepStopsTheRestore(t *testing.T) {
	var calls atomic.Int32
	panicky := Step{Name: "panicky", Run: func(_ context.Context, o *Object) error {
		if calls.Add(1) == 1 {
			var m map[string]int
			m["boom"]++ // a nil map write: the runtime panics, in this function
		}
		return nil
	}}
	rep, err := restoreAll(context.Background(), shopTarget(t), shop(t), testOptions{Retry: fastRetry, Workers: 1,
		Steps: func(steps []Step) []Step { return append([]Step{panicky}, steps...) }})
	var pe *scheduler.PanicError
	require.ErrorAs(t, err, &pe, "a panic is the restore's fault")
	assert.Regexp(t, `panic: assignment to entry in nil map \(in github.com/restoregraph/restoregraph/restore.TestPanicInAStepStopsTheRestore.func1 \(restore_test.go:\d+\)\)$`, err.Error())
	require.NotNil(t, rep)
	assert.Equal(t, 1, rep.Count(Failed))
	var failed ObjectResult
	for o := range rep.Objects() {
		if o.Status == Failed {
			failed = o
		}
	}
	assert.ErrorAs(t, failed.Err, &pe, "the object that panicked says so")
	assert.Zero(t, rep.Count(Restored), "nothing starts after the panic")
	assert.Equal(t, rep.Len()-1, rep.Count(Cancelled)+rep.Count(Skipped), "the rest is skipped behind it or cancelled")
}

// panics panics on the ConfigMap settings, as an in-process plugin with a bug would.
type panics struct{}

func (panics) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"configmaps"}}, nil
}
func (panics) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	if in.Item.GetName() == "settings" {
		var m map[string]int
		m["boom"]++
	}
	return &ria.ExecuteOutput{UpdatedItem: in.Item}, nil
}

// A plugin's panic is contained at the plugin's call, as a crash of one of Velero's
// plugin processes is: its object fails with the plugin named and where it panicked, and
// the rest of the restore goes on.
func TestPanicInAPluginFailsItsObject(t *testing.T) {
	var reg plugin.Registry
	require.NoError(t, reg.Register("example.io/panics", plugin.V1, panics{}))
	rep, err := restoreAll(context.Background(), shopTarget(t), shop(t), testOptions{Plugins: &reg, Retry: fastRetry})
	require.NoError(t, err, "a plugin's panic is its object's failure, not the restore's")
	objects := byName(rep)
	settings := objects["configmaps/settings"]
	assert.Equal(t, Failed, settings.Status)
	var plug *PluginError
	require.ErrorAs(t, settings.Err, &plug)
	assert.Equal(t, "example.io/panics", plug.Plugin)
	var pe *scheduler.PanicError
	require.ErrorAs(t, settings.Err, &pe)
	assert.Regexp(t, `^plugin example.io/panics: panic: assignment to entry in nil map \(in github.com/restoregraph/restoregraph/restore.panics.Execute \(restore_test.go:\d+\)\)`, settings.Reason)
	assert.Equal(t, 1, rep.Count(Failed))
	assert.Equal(t, Restored, objects["deployments/web"].Status, "the rest goes on")
}

// hangs never answers for the ConfigMap settings but when its context ends, as an
// in-process plugin stuck on a call of its own would.
type hangs struct{}

func (hangs) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"configmaps"}}, nil
}
func (hangs) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	return nil, errors.New("called without a context")
}
func (hangs) ExecuteContext(ctx context.Context, in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	if in.Item.GetName() == "settings" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &ria.ExecuteOutput{UpdatedItem: in.Item}, nil
}

// A plugin call is charged to its object's time: a plugin that hangs fails that object
// with ErrItemTimeout, named, and the rest of the restore goes on.
func TestHungPluginFailsItsObject(t *testing.T) {
	var reg plugin.Registry
	require.NoError(t, reg.Register("example.io/hangs", plugin.V1, hangs{}))
	done := make(chan struct{})
	var rep *Report
	var err error
	go func() {
		defer close(done)
		rep, err = restoreAll(context.Background(), shopTarget(t), shop(t), testOptions{Plugins: &reg, Retry: fastRetry, ItemTimeout: 500 * time.Millisecond})
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the restore waited on the hung plugin")
	}
	require.NoError(t, err)
	settings := byName(rep)["configmaps/settings"]
	assert.Equal(t, Failed, settings.Status)
	assert.Contains(t, settings.Reason, "plugin example.io/hangs")
	assert.Contains(t, settings.Reason, ErrItemTimeout.Error())
	assert.Equal(t, Restored, byName(rep)["deployments/web"].Status, "the rest goes on")
}
