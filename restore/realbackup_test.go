package restore

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/plugin"
	"github.com/restoregraph/restoregraph/plugin/builtin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// shop is the shop namespace as a real kube-apiserver and its controllers wrote it
// (testdata/backups/README.md).
func shop(t *testing.T) *archive.Backup {
	t.Helper()
	b, err := archive.ReadFile(context.Background(), "../testdata/backups/shop-k8s-1.37.tar.gz", archive.Options{})
	require.NoError(t, err)
	return b
}

// shopTarget is an embedded server whose Service range differs from the source's.
func shopTarget(t *testing.T) Target {
	_, tgt := cluster(t, memcluster.Options{ServiceCIDR: "10.96.0.0/24"})
	return tgt
}

func byName(rep *Report) map[string]ObjectResult {
	out := map[string]ObjectResult{}
	for o := range rep.Objects() {
		out[o.Resource+"/"+o.Name] = o
	}
	return out
}

func get(t *testing.T, tgt Target, gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
	t.Helper()
	o, err := tgt.Dynamic.Resource(gvr).Namespace("shop").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err, "%s %s", gvr.Resource, name)
	return o
}

var (
	servicesGVR = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	podsGVR     = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	jobsGVR     = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
)

func TestRealBackupRestoresWhole(t *testing.T) {
	b := shop(t)
	tgt := shopTarget(t)
	rep, err := restoreAll(context.Background(), tgt, b, testOptions{Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK(), "summary %v, first failure: %v", rep.Summary, firstFailure(rep))
	res := byName(rep)

	for name, o := range res {
		switch {
		case o.Kind == "Event":
			assert.Equal(t, Skipped, o.Status, name)
			assert.Equal(t, NonRestorable, o.SkippedBy, name)
		case o.Kind == "EndpointSlice" || o.Kind == "Endpoints" || name == "configmaps/kube-root-ca.crt":
			assert.Equal(t, Skipped, o.Status, name)
			assert.Equal(t, ControllerManaged, o.SkippedBy, name)
		default:
			assert.Equal(t, Restored, o.Status, "%s: %s", name, o.Reason)
			assert.Empty(t, o.Warnings, name)
		}
	}
	for _, name := range []string{"web", "web-public"} {
		ip, _, _ := unstructured.NestedString(get(t, tgt, servicesGVR, name).Object, "spec", "clusterIP")
		assert.True(t, strings.HasPrefix(ip, "10.96.0."), "%s got %s from the target's range", name, ip)
	}
	ip, _, _ := unstructured.NestedString(get(t, tgt, servicesGVR, "db").Object, "spec", "clusterIP")
	assert.Equal(t, "None", ip)
	node, _, _ := unstructured.NestedString(get(t, tgt, podsGVR, "debug").Object, "spec", "nodeName")
	assert.Empty(t, node, "the Pod is no longer bound to the source's node")
	job := get(t, tgt, jobsGVR, "migrate")
	sel, _, _ := unstructured.NestedStringMap(job.Object, "spec", "selector", "matchLabels")
	assert.Equal(t, string(job.GetUID()), sel["batch.kubernetes.io/controller-uid"], "the target generated the selector")
	// The Job's Pod carries the new Job's UID in the labels the Job selects it by, or the
	// Job would release it and ownership would be lost.
	pod := get(t, tgt, podsGVR, "migrate-7fdlt")
	require.Len(t, pod.GetOwnerReferences(), 1)
	assert.Equal(t, job.GetUID(), pod.GetOwnerReferences()[0].UID)
	for _, l := range []string{"controller-uid", "batch.kubernetes.io/controller-uid"} {
		assert.Equal(t, string(job.GetUID()), pod.GetLabels()[l], l)
	}

	// The plan says what it folded and what it leaves to the target.
	p, err := planAll(context.Background(), tgt, b, testOptions{})
	require.NoError(t, err)
	folded, excluded := 0, map[string]int{}
	for o := range p.Objects() {
		if o.Kind == "Event" {
			assert.Equal(t, "events.k8s.io", o.Group, "kept under the newer group")
			assert.Equal(t, []string{"events"}, o.Folded)
			folded++
		}
		if o.ExcludedBy != "" {
			excluded[o.ExcludedBy]++
		}
	}
	assert.Positive(t, folded)
	assert.Equal(t, folded, excluded[NonRestorable])
	assert.Equal(t, 7, excluded[ControllerManaged], "3 Endpoints, 3 EndpointSlices and kube-root-ca.crt")
}

// Each built-in action matters on a real backup, and each can be switched off by name:
// without it, the real server's rules (here memcluster's, which the contract holds to
// the real server's) refuse the object.
func TestBuiltinActionsCanBeDisabled(t *testing.T) {
	b := shop(t)
	for _, tc := range []struct {
		disable, object, refusal string
	}{
		{builtin.Service, "services/web", "does not match the current range"},
		{builtin.Job, "jobs/migrate", "`selector` not auto-generated"},
	} {
		t.Run(tc.disable, func(t *testing.T) {
			rep, err := restoreAll(context.Background(), shopTarget(t), b, testOptions{Retry: fastRetry, Disable: []string{tc.disable}})
			require.NoError(t, err)
			o := byName(rep)[tc.object]
			assert.Equal(t, Failed, o.Status)
			assert.Contains(t, o.Reason, tc.refusal)
		})
	}

	rep, err := restoreAll(context.Background(), shopTarget(t), b, testOptions{Retry: fastRetry, Disable: []string{ControllerManaged}})
	require.NoError(t, err)
	assert.Equal(t, Restored, byName(rep)["endpointslices/web-k4z2b"].Status, "restored when the rule is off")

	tgt := shopTarget(t)
	rep, err = restoreAll(context.Background(), tgt, b, testOptions{Retry: fastRetry, PreserveNodePorts: true})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", firstFailure(rep))
	ports, _, _ := unstructured.NestedSlice(get(t, tgt, servicesGVR, "web-public").Object, "spec", "ports")
	assert.EqualValues(t, 32615, ports[0].(map[string]any)["nodePort"], "the source's node port, preserved")
}

// hideGroup is discovery without one group: a target that does not serve it.
type hideGroup struct {
	Target
	group string
}

func (h hideGroup) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	groups, lists, err := h.Target.Discovery.ServerGroupsAndResources()
	var g []*metav1.APIGroup
	for _, x := range groups {
		if x.Name != h.group {
			g = append(g, x)
		}
	}
	var l []*metav1.APIResourceList
	for _, x := range lists {
		if !strings.HasPrefix(x.GroupVersion, h.group+"/") {
			l = append(l, x)
		}
	}
	return g, l, err
}

func TestFoldedObjectRestoredThroughTheGroupTheTargetServes(t *testing.T) {
	b := shop(t)
	tgt := shopTarget(t)
	tgt.Discovery = hideGroup{tgt, "events.k8s.io"}
	opts := testOptions{Retry: fastRetry, NonRestorable: []schema.GroupResource{}}
	rep, err := restoreAll(context.Background(), tgt, b, opts)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", firstFailure(rep))
	events := 0
	for o := range rep.Objects() {
		if o.Kind == "Event" {
			events++
			assert.Equal(t, "", o.Group, "through the core group, which the target serves")
			assert.Equal(t, Restored, o.Status)
		}
	}
	assert.Positive(t, events)
	list, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "events"}).Namespace("shop").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, events, "each Event once")
}

func TestHealthIsWaitedForAtTheEndOnly(t *testing.T) {
	b := shop(t)
	tgt := shopTarget(t)
	rep, err := restoreAll(context.Background(), tgt, b, testOptions{Retry: fastRetry, HealthTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	assert.Zero(t, rep.Count(Failed), "nothing waits on health before its dependents: %v", firstFailure(rep))
	require.NotNil(t, rep.Health)
	notHealthy := map[string]bool{}
	for _, h := range rep.Health.NotHealthy {
		notHealthy[h.Kind+"/"+h.Name] = true
	}
	// No controller runs in the embedded server: workloads never report progress.
	assert.True(t, notHealthy["Deployment/web"], "%v", rep.Health.NotHealthy)
	assert.True(t, notHealthy["Pod/debug"])
	assert.False(t, notHealthy["ConfigMap/settings"], "a ConfigMap is Current once it exists")
	assert.Positive(t, rep.Health.Healthy)
	assert.False(t, rep.OK(), "asked for health, not healthy: not OK")
}

// What every namespace already has is adopted, whatever the Existing policy, and says
// nothing: the target's controllers made it. kube-root-ca.crt is not restored at all:
// it holds the source's CA, and the target's publisher writes the target's.
func TestNamespaceDefaultsAreAdoptedQuietly(t *testing.T) {
	b := shop(t)
	ctx := context.Background()
	// A target whose controllers made the namespace's defaults already.
	prepared := func() Target {
		tgt := shopTarget(t)
		_, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx,
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		for _, o := range []struct{ resource, kind, name string }{{"serviceaccounts", "ServiceAccount", "default"}, {"configmaps", "ConfigMap", "kube-root-ca.crt"}} {
			_, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: o.resource}).Namespace("shop").Create(ctx,
				&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": o.kind, "metadata": map[string]any{"name": o.name}}}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		return tgt
	}
	// The Namespace exists too: leave it out, so that Fail applies to what is in it.
	opts := testOptions{Retry: fastRetry, Existing: Fail, NonRestorable: []schema.GroupResource{{Resource: "namespaces"}, {Resource: "events"}, {Group: "events.k8s.io", Resource: "events"}}}
	rep, err := restoreAll(ctx, prepared(), b, opts)
	require.NoError(t, err)
	res := byName(rep)
	assert.Equal(t, Adopted, res["serviceaccounts/default"].Status)
	assert.Empty(t, res["serviceaccounts/default"].Warnings)
	assert.Empty(t, res["serviceaccounts/default"].Reason)
	assert.Equal(t, Skipped, res["configmaps/kube-root-ca.crt"].Status, "the source's CA is not restored")
	assert.Contains(t, res["configmaps/kube-root-ca.crt"].Reason, "root-ca-cert-publisher")
	assert.Equal(t, Restored, res["serviceaccounts/app"].Status)

	// With the controller-managed rule off, it is one of the namespace's defaults.
	opts.Disable = []string{ControllerManaged}
	rep, err = restoreAll(ctx, prepared(), b, opts)
	require.NoError(t, err)
	assert.Equal(t, Adopted, byName(rep)["configmaps/kube-root-ca.crt"].Status)

	opts.Disable = []string{ControllerManaged, NamespaceDefaults}
	rep, err = restoreAll(ctx, prepared(), b, opts)
	require.NoError(t, err)
	res = byName(rep)
	assert.Equal(t, Failed, res["serviceaccounts/default"].Status, "with the rule off, Fail applies")
	assert.Equal(t, Failed, res["configmaps/kube-root-ca.crt"].Status)
}

// veleroFixture is a backup the real Velero server (v1.18.3, with its AWS plugin, into an
// S3 server) wrote of an application namespace as its controllers left it and of a
// Cluster API workload cluster whose CRDs are served at two versions, with
// EnableAPIGroupVersions; `make fixtures` writes it again.
const veleroFixture = "../testdata/velero/shop-and-fleet/shop-and-fleet.tar.gz"

// A backup the real Velero server wrote restores whole into the embedded server: every
// object restored or left out by a rule that names itself, nothing collected by the
// garbage collector, and verify holds (it would not with an ownership link lost).
func TestRestoreABackupVeleroWrote(t *testing.T) {
	b, err := archive.ReadFile(context.Background(), veleroFixture, archive.Options{})
	require.NoError(t, err)
	assert.Empty(t, b.Warnings(), "Velero's layout reads without a warning")
	srv, tgt := cluster(t, memcluster.Options{GC: true, GCDelay: 50 * time.Millisecond, ServiceCIDR: "10.96.0.0/24"})
	ctx := context.Background()
	rep, err := restoreAll(ctx, tgt, b, testOptions{Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK(), "summary %v, first failure: %v", rep.Summary, firstFailure(rep))
	kinds := map[string]bool{}
	for o := range rep.Objects() {
		kinds[o.Kind] = true
		if o.Status != Restored {
			assert.Equal(t, Skipped, o.Status, "%s %s/%s", o.Kind, o.Namespace, o.Name)
			assert.NotEmpty(t, o.SkippedBy, "%s %s/%s is left out by a rule that names itself", o.Kind, o.Namespace, o.Name)
		}
	}
	for _, k := range []string{"CustomResourceDefinition", "Cluster", "Machine", "Deployment", "ReplicaSet", "Pod", "StatefulSet", "Job", "CronJob"} {
		assert.True(t, kinds[k], "the backup holds a %s", k)
	}
	time.Sleep(300 * time.Millisecond)
	assert.Zero(t, srv.Collected(), "nothing restored is collected")
	v, err := verifyAll(ctx, tgt, b, testOptions{Retry: fastRetry})
	require.NoError(t, err)
	assert.True(t, v.OK(), "%v", v.Summary)
}

// TestBackupObjectsAreNotChanged: whatever the steps and the server do to the objects
// they create, each object as the backup holds it (Object.Backup, which plugins are
// given as ItemFromBackup and status is restored from) stays as it was read, though the
// default steps share what they do not change with it. An object no step reads the
// backup's copy of (no action applies to it, or only one that takes its JSON, the Pod
// action, where nothing else asks for a copy) is restored from that copy itself.
func TestBackupObjectsAreNotChanged(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		backup    func(*testing.T) *archive.Backup
		inProcess bool
		cidr      string // the target's Service range, when not the shop's
		opts      testOptions
		noCopies  bool // no object is given a copy: no action applies, or only the Pod action
	}{
		{name: "shop", backup: shop},
		{name: "shop in-process", backup: shop, inProcess: true},
		// Services reach the server as the backup has them, cluster IPs and all.
		{name: "shop in-process, no Service action", backup: shop, inProcess: true, cidr: "10.0.0.0/16", opts: testOptions{Disable: []string{builtin.Service}}, noCopies: true},
		{name: "shop mapped", backup: shop, inProcess: true, opts: testOptions{NamespaceMappings: map[string]string{"shop": "shop-2"}}},
		{name: "fleet in-process", backup: func(t *testing.T) *archive.Backup { return capiBackup(t, 2) }, inProcess: true, noCopies: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.backup(t)
			if c.cidr == "" {
				c.cidr = "10.96.0.0/24"
			}
			s, tgt := cluster(t, memcluster.Options{ServiceCIDR: c.cidr})
			if c.inProcess {
				tgt = inProcess(s, tgt)
			}
			var mu sync.Mutex
			shared, own := 0, 0
			po, ro := c.opts.split()
			ro.Retry = fastRetry
			ro.inspect = func(o *Object) {
				if o.Backup == nil {
					return
				}
				if o.Backup == o.Body {
					mu.Lock()
					own++
					mu.Unlock()
					return
				}
				body, err := b.Body(o.Item.GroupResource(), o.Resource.Version, o.Item.Namespace, o.Item.Name)
				require.NoError(t, err)
				read, err := decodeObject(body)
				require.NoError(t, err)
				assert.Equal(t, read.Object, o.Backup.Object, "%s", o.Item)
				mu.Lock()
				if o.shared {
					shared++
				}
				mu.Unlock()
			}
			p, err := NewPlan(ctx, b, tgt, po)
			require.NoError(t, err)
			rep, err := Apply(ctx, p, tgt, ro)
			require.NoError(t, err)
			require.True(t, rep.OK(), "summary %v, first failure: %v", rep.Summary, firstFailure(rep))
			if c.noCopies {
				assert.Zero(t, shared, "objects were restored with a copy of their own")
			} else {
				assert.Positive(t, shared, "some objects were restored without a copy of their own")
			}
			assert.Positive(t, own, "some objects were restored from the backup's copy itself")
		})
	}
}

// recordsBackupItem applies to ConfigMaps and keeps what it is given as ItemFromBackup:
// a copy, or with asGiven the object itself.
type recordsBackupItem struct {
	mu      sync.Mutex
	seen    map[string]*unstructured.Unstructured
	asGiven bool
}

func (p *recordsBackupItem) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"configmaps"}}, nil
}

func (p *recordsBackupItem) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	it := in.ItemFromBackup
	if !p.asGiven {
		it = it.DeepCopy()
	}
	p.seen[it.GetName()] = it
	return ria.NewExecuteOutput(in.Item), nil
}

// An action is given the object as the backup holds it, in its namespace in the backup,
// with the UID and resourceVersion the restore leaves out of what it creates; the objects
// of the kinds it does not apply to are restored from the backup's copy itself.
func TestActionsAreGivenTheBackupsObject(t *testing.T) {
	b := shop(t)
	p := &recordsBackupItem{seen: map[string]*unstructured.Unstructured{}}
	var reg plugin.Registry
	require.NoError(t, reg.Register("records", plugin.V1, p))
	rep, err := restoreAll(context.Background(), shopTarget(t), b, testOptions{Plugins: &reg, Retry: fastRetry,
		NamespaceMappings: map[string]string{"shop": "shop-2"}})
	require.NoError(t, err)
	require.True(t, rep.OK(), firstFailure(rep))
	require.NotEmpty(t, p.seen)
	for name, got := range p.seen {
		it, ok := b.Manifest().Get(manifest.ID{Resource: "configmaps", Namespace: got.GetNamespace(), Name: name})
		require.True(t, ok, "%s/%s is not in the backup", got.GetNamespace(), name)
		body, err := b.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
		require.NoError(t, err)
		read, err := decodeObject(body)
		require.NoError(t, err)
		assert.Equal(t, read.Object, got.Object, "ConfigMap %s", name)
		assert.NotEmpty(t, got.GetUID(), "ConfigMap %s", name)
	}
}

// restoreInProcessWith restores b into an embedded server that the restore hands each
// object in this process (its maps then used again), with action registered as name,
// and requires every object restored. It returns the server's target.
func restoreInProcessWith(t *testing.T, b *archive.Backup, name string, action any) Target {
	t.Helper()
	var reg plugin.Registry
	require.NoError(t, reg.Register(name, plugin.V1, action))
	s, tgt := cluster(t, memcluster.Options{ServiceCIDR: "10.96.0.0/24"})
	rep, err := restoreAll(context.Background(), inProcess(s, tgt), b, testOptions{Plugins: &reg, Retry: fastRetry})
	require.NoError(t, err)
	require.True(t, rep.OK(), firstFailure(rep))
	return tgt
}

// The restore uses the maps of the objects it has restored again for the objects it
// decodes after them, but not those of an object an action was given that does not say
// it keeps nothing (plugin.ItemForgetter): what such an action kept stays as it was
// given, through the whole restore.
func TestWhatAnActionKeepsIsNotUsedAgain(t *testing.T) {
	b := shop(t)
	p := &recordsBackupItem{seen: map[string]*unstructured.Unstructured{}, asGiven: true}
	restoreInProcessWith(t, b, "keeps", p)
	require.NotEmpty(t, p.seen)
	for name, got := range p.seen {
		it, ok := b.Manifest().Get(manifest.ID{Resource: "configmaps", Namespace: "shop", Name: name})
		require.True(t, ok, "shop/%s is not in the backup", name)
		body, err := b.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
		require.NoError(t, err)
		read, err := decodeObject(body)
		require.NoError(t, err)
		assert.Equal(t, read.Object, got.Object, "ConfigMap %s", name)
	}
}

// makesData gives each ConfigMap a data of its own, made by the restore's maker
// (plugin.MapMakerUser): its Execute is not to be called.
type makesData struct {
	t     *testing.T
	mu    sync.Mutex
	calls int
}

func (p *makesData) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"configmaps"}}, nil
}

func (p *makesData) Execute(*ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	p.t.Error("Execute called on an action that makes its maps with the restore's maker")
	return nil, errors.New("not this way")
}

func (p *makesData) ExecuteMaking(in *ria.ExecuteInput, mk plugin.MapMaker) (*ria.ExecuteOutput, error) {
	p.mu.Lock()
	p.calls++
	p.mu.Unlock()
	data, _ := in.Item.Object["data"].(map[string]any)
	made := mk.Map(len(data) + 1)
	maps.Copy(made, data)
	made["restored-by"] = in.Item.GetName()
	in.Item.Object["data"] = made
	return ria.NewExecuteOutput(in.Item), nil
}

// An action that makes its maps with the restore's maker is called so, and what it made
// is what is restored, object by object, though the restore takes those maps back for
// the objects it decodes after.
func TestActionsMakeMapsWithTheRestoresMaker(t *testing.T) {
	b := shop(t)
	p := &makesData{t: t}
	tgt := restoreInProcessWith(t, b, "makes", p)
	require.Positive(t, p.calls)
	list, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("shop").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, p.calls)
	for _, cm := range list.Items {
		it, ok := b.Manifest().Get(manifest.ID{Resource: "configmaps", Namespace: "shop", Name: cm.GetName()})
		require.True(t, ok, cm.GetName())
		body, err := b.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
		require.NoError(t, err)
		read, err := decodeObject(body)
		require.NoError(t, err)
		want, _ := read.Object["data"].(map[string]any)
		want = maps.Clone(want)
		if want == nil {
			want = map[string]any{}
		}
		want["restored-by"] = cm.GetName()
		assert.Equal(t, want, cm.Object["data"], "ConfigMap %s", cm.GetName())
	}
}
