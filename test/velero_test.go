package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/clirun"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// writeFixturesEnv names a directory into which TestVeleroSideBySide copies what Velero
// wrote into the bucket for each backup (make fixtures sets it to testdata/velero).
const writeFixturesEnv = "RESTOREGRAPH_WRITE_VELERO_FIXTURES"

// veleroCluster is a control plane with what an application needs to run: the workload
// controllers, the scheduler and fake nodes, so that Deployments become Available, Pods
// Running, Jobs Complete, as Velero sees a real cluster.
func veleroCluster(t testing.TB) *harness.Cluster {
	return startCluster(t, harness.Options{Controllers: harness.AppControllers, ServiceAccountAdmission: true, Nodes: 2})
}

var (
	veleroBackups  = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "backups"}
	veleroRestores = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "restores"}
)

// veleroPhase waits until the Velero object of gvr and name reaches a phase that ends
// it, and returns that phase.
func veleroPhase(t testing.TB, c *harness.Cluster, gvr schema.GroupVersionResource, name string, done ...string) string {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.Config)
	require.NoError(t, err)
	var phase string
	err = wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		o, err := dyn.Resource(gvr).Namespace("velero").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase, _, _ = unstructured.NestedString(o.Object, "status", "phase")
		for _, d := range done {
			if phase == d {
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "%s %s stays %q", gvr.Resource, name, phase)
	return phase
}

// sourceWithVelero is a cluster holding the application namespace as its controllers
// leave it and a fleet of Cluster API workload clusters whose CRDs are served at two
// versions (in namespaces fleet-00 and on),
// backed up by the real Velero server into s as backup name. It returns the tarball's
// path in the bucket.
func sourceWithVelero(t testing.TB, s *harness.S3, name string, clusters int) string {
	t.Helper()
	ctx := context.Background()
	src := veleroCluster(t)
	defer src.Stop()
	tgt := restoreTarget(t, src.Config)
	// The CRDs exist before the Velero server starts: it reads the served resources once
	// at start and again only every five minutes, and leaves out of a backup, silently,
	// what it has not seen.
	fleet := filepath.Join(t.TempDir(), "fleet.tar.gz")
	var buf bytes.Buffer
	require.NoError(t, workload.CAPI(workload.CAPIOptions{Clusters: clusters, Seed: 7}).Write(&buf))
	require.NoError(t, os.WriteFile(fleet, buf.Bytes(), 0o644))
	fb, err := archive.ReadFile(context.Background(), fleet, archive.Options{})
	require.NoError(t, err)
	rep, err := restore.Run(ctx, fb, tgt, restore.PlanOptions{}, restore.RunOptions{})
	require.NoError(t, err)
	require.True(t, rep.OK(), "the fleet is made in the source cluster")
	createApp(t, tgt)

	v, err := src.StartVelero(ctx, s, harness.VeleroOptions{Features: []string{"EnableAPIGroupVersions"}})
	require.NoError(t, err)
	namespaces := []string{"shop"}
	for i := range clusters {
		namespaces = append(namespaces, fmt.Sprintf("fleet-%02d", i))
	}
	out, err := v.Run(ctx, "backup", "create", name, "--include-namespaces", strings.Join(namespaces, ","), "--wait")
	require.NoError(t, err, out)
	phase := veleroPhase(t, src, veleroBackups, name, "Completed", "PartiallyFailed", "Failed")
	require.Equal(t, "Completed", phase, "velero backup %s\n%s", name, v.Log())
	src.StopVelero()

	dir := s.Path("backups/" + name)
	if out := os.Getenv(writeFixturesEnv); out != "" {
		require.NoError(t, os.CopyFS(filepath.Join(out, name), os.DirFS(dir)), "the fixtures, written again")
	}
	return filepath.Join(dir, name+".tar.gz")
}

// TestVeleroSideBySide restores one backup that the real Velero server wrote into real
// object storage twice, each into a fresh cluster whose controllers run: with `velero
// restore create`, and with restoregraph. Each is then read back against the backup: what
// is there, how every ownership link of the backup stands once the controllers and the
// garbage collector have acted, and what `restoregraph verify` says. restoregraph must
// lose nothing Velero keeps.
func TestVeleroSideBySide(t *testing.T) {
	t.Parallel() // its own control planes and S3 server: beside the other tests that have theirs
	ctx := context.Background()
	s, err := harness.StartS3(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	const name = "shop-and-fleet"
	tarball := sourceWithVelero(t, s, name, 1)
	b, err := archive.ReadFile(context.Background(), tarball, archive.Options{})
	require.NoError(t, err, "the tarball Velero wrote reads")

	// Velero's restore, by the Velero server of the target, from the same bucket.
	vc := veleroCluster(t)
	v, err := vc.StartVelero(ctx, s, harness.VeleroOptions{Features: []string{"EnableAPIGroupVersions"}, ReadOnly: true})
	require.NoError(t, err)
	veleroPhase(t, vc, veleroBackups, name, "Completed") // synced from the bucket
	started := time.Now()
	out, err := v.Run(ctx, "restore", "create", name+"-restore", "--from-backup", name, "--wait")
	veleroTook := time.Since(started)
	require.NoError(t, err, out)
	veleroResult := veleroPhase(t, vc, veleroRestores, name+"-restore", "Completed", "PartiallyFailed", "Failed", "FailedValidation")
	if veleroResult != "Completed" {
		describe, _ := v.Run(ctx, "restore", "describe", name+"-restore", "--details")
		logs, _ := v.Run(ctx, "restore", "logs", name+"-restore")
		t.Logf("velero restore describe:\n%s\nvelero restore logs:\n%s", describe, logs)
	}
	vc.StopVelero()
	vt := restoreTarget(t, vc.Config)
	veleroAt := standingOf(t, vt, b)

	// restoregraph's, from the command line, of the same backup, read where Velero keeps
	// it, by its URL, through a network that drops the download half way.
	rc := veleroCluster(t)
	rt := restoreTarget(t, rc.Config)
	bin, err := cliBinary()
	require.NoError(t, err)
	size := fileSize(t, tarball)
	proxy := newCuttingProxy(t, s.Endpoint, "/"+name+".tar.gz", size/2)
	env := s3Env(t, s)
	url := "s3://" + s.Bucket + "/" + name
	run, err := clirun.StartEnv(env, bin, "restore", "--backup", url, "--s3-endpoint", proxy.URL, "--kubeconfig", rc.Kubeconfig, "-o", "json")
	require.NoError(t, err, "restoregraph restores the backup Velero wrote whole (exit 0)")
	rgTook := run.Took
	assert.Equal(t, []string{"GET ", fmt.Sprintf("GET bytes=%d-", size/2)}, proxy.gets(), "the download is resumed where it broke, not restarted")
	assert.Contains(t, string(run.Stderr), "resumed 1 time")
	var report restoreReport
	require.NoError(t, json.Unmarshal(run.Stdout, &report))
	rgAt := standingOf(t, rt, b)

	// The controllers adopt what has no owner and make what is missing; the garbage
	// collector removes what names an owner that is not there.
	time.Sleep(15 * time.Second)
	veleroEnd, rgEnd := standingOf(t, vt, b), standingOf(t, rt, b)
	veleroGone, rgGone := gone(veleroAt, veleroEnd), gone(rgAt, rgEnd)
	veleroVerify, veleroProblems, _ := verifyTarget(t, tarball, vc.Kubeconfig)
	rgVerify, rgProblems, rgReplaced := verifyTarget(t, tarball, rc.Kubeconfig)

	t.Logf("%d objects in the backup\n"+
		"| | Velero %s | restoregraph |\n|---|---|---|\n"+
		"| wall time | %s (%s) | %s |\n| objects there after the restore | %d | %d |\n"+
		"| ownership links kept / wrong / lost, after 15 s | %d / %d / %d | %d / %d / %d |\n"+
		"| removed afterwards | %d | %d |\n| verify | %v | %v |",
		len(b.Manifest().Items()), veleroVersionOf(t, v),
		veleroTook.Round(10*time.Millisecond), veleroResult, rgTook.Round(10*time.Millisecond),
		len(veleroAt.present), len(rgAt.present),
		veleroEnd.kept, veleroEnd.wrong, len(veleroEnd.lost), rgEnd.kept, rgEnd.wrong, len(rgEnd.lost),
		len(veleroGone), len(rgGone), veleroVerify, rgVerify)
	t.Logf("ownership Velero lost:\n%s\nremoved after Velero's restore: %v\nremoved after restoregraph's: %v\nverify after Velero:\n%s",
		strings.Join(veleroEnd.lost, "\n"), veleroGone, rgGone, strings.Join(veleroProblems, "\n"))

	assert.Equal(t, "Completed", veleroResult, "the reference itself restores the backup")
	// What Velero's restore holds at the end, restoregraph's holds too; or restoregraph
	// left it to the target's controllers, which make their own (EndpointSlices), or the
	// controller of the object made one of its own in its place (a ReplicaSet's Pod,
	// restored after its ReplicaSet: Velero restores Pods first, and its ReplicaSet adopts
	// them), which verify reports as Replaced.
	left := report.leftToTarget()
	var elsewhere []string
	for id := range veleroEnd.present {
		if _, ok := rgEnd.present[id]; ok {
			continue
		}
		if left[id] || rgReplaced[id] {
			elsewhere = append(elsewhere, id.String())
			continue
		}
		t.Errorf("%s: Velero's restore has it, restoregraph's must", id)
	}
	t.Logf("in Velero's restore, not in restoregraph's, left to or replaced by the target's controllers: %v", elsewhere)
	assert.Empty(t, rgEnd.lost, "restoregraph keeps every ownership link")
	assert.Zero(t, rgEnd.wrong)
	assert.GreaterOrEqual(t, rgEnd.kept, veleroEnd.kept)
	assert.Empty(t, rgGone, "nothing restoregraph restored is removed afterwards")
	assert.Empty(t, rgProblems, "verify holds after restoregraph")
	assert.NotEmpty(t, veleroEnd.lost, "Velero removes ownerReferences; links no controller makes again stay lost")
	assert.NotZero(t, veleroVerify[restore.Differs], "and verify says so")

	// Field ownership: every manager the backup recorded for an object that Velero's
	// restore keeps, restoregraph's keeps too.
	veleroRecorded, veleroMissing := managersOf(t, vt, b)
	rgRecorded, rgMissing := managersOf(t, rt, b)
	t.Logf("managers the backup recorded, and not kept: Velero %d, %d; restoregraph %d, %d\nnot kept by Velero's restore: %v\nnot kept by restoregraph's: %v",
		veleroRecorded, len(veleroMissing), rgRecorded, len(rgMissing), veleroMissing, rgMissing)
	assert.NotZero(t, rgRecorded, "the backup records its objects' managers")
	for _, m := range rgMissing {
		if !slices.Contains(veleroMissing, m) {
			t.Errorf("%s: kept by Velero's restore, not by restoregraph's", m)
		}
	}

	// By name, as Velero names it: the Backup and its location read from the cluster
	// where Velero ran, the Secret of the location's credential handed to the location's
	// own object-store plugin (Velero's AWS plugin, run out of process) and nothing from
	// the environment, the tarball read through the plugin.
	byFile, err := clirun.StartEnv(env, bin, "plan", "--backup", tarball, "--kubeconfig", vc.Kubeconfig, "-o", "json")
	require.NoError(t, err)
	byURL, err := clirun.StartEnv(env, bin, "plan", "--backup", url, "--s3-endpoint", s.Endpoint, "--kubeconfig", vc.Kubeconfig, "-o", "json")
	require.NoError(t, err)
	env = withoutCredentials(env)
	byName := []string{"--from-backup", name, "--plugins", v.PluginDir()}
	plan, err := clirun.StartEnv(env, bin, append([]string{"plan", "--kubeconfig", vc.Kubeconfig, "-o", "json"}, byName...)...)
	require.NoError(t, err, "plan --from-backup")
	var planned struct {
		Objects []json.RawMessage `json:"objects"`
	}
	require.NoError(t, json.Unmarshal(plan.Stdout, &planned))
	assert.Len(t, planned.Objects, len(b.Manifest().Items()))
	// One plan, but for where each says the backup is kept (by name through Velero: not
	// a location of its own).
	fromFile := planWithout(t, byFile.Stdout, tarball)
	assert.Equal(t, fromFile, planWithout(t, plan.Stdout, ""), "planned by name as from the tarball")
	assert.Equal(t, fromFile, planWithout(t, byURL.Stdout, url), "and by URL")
	t.Logf("plan of %d objects, %d KiB of tarball: from the file %s, by s3:// URL %s, by name through Velero's AWS plugin %s",
		len(planned.Objects), size>>10, byFile.Took.Round(time.Millisecond), byURL.Took.Round(time.Millisecond), plan.Took.Round(time.Millisecond))
	code, text := cliEnv(t, env, append([]string{"verify", "--source-kubeconfig", vc.Kubeconfig, "--kubeconfig", rc.Kubeconfig}, byName...)...)
	assert.Equal(t, 0, code, "verify --from-backup of restoregraph's restore, Velero in another cluster\n%s", text)
	code, text = cliEnv(t, env, "plan", "--from-backup", "nightly", "--kubeconfig", vc.Kubeconfig, "--plugins", v.PluginDir())
	assert.Equal(t, 2, code, text)
	assert.Contains(t, text, "no such backup: velero/nightly")

	// What deleting an owner leaves behind: the workload cluster's Cluster is deleted in
	// both targets, as a person ends a cluster; the garbage collector removes what it
	// owns, through the owner chain, where the chain is there.
	veleroLeft, rgLeft := deleteCluster(t, vt, b), deleteCluster(t, rt, b)
	t.Logf("what the Cluster owns, left 15 s after it was deleted: Velero's restore %d, restoregraph's %d", veleroLeft, rgLeft)
	assert.Zero(t, rgLeft, "ownership restored is ownership that cascades")
	assert.NotZero(t, veleroLeft, "without ownerReferences, nothing cascades")

	// restoregraph updates what Velero restored in place, Jobs included (their selector
	// was generated by the target and cannot change).
	code, text = cliEnv(t, env, "restore", "--backup", tarball, "--kubeconfig", vc.Kubeconfig, "--existing", "update")
	assert.Equal(t, 0, code, "restore --existing update over Velero's restore\n%s", text)
}

// veleroVersionOf is what the Velero client says of itself.
func veleroVersionOf(t testing.TB, v *harness.Velero) string {
	out, err := v.Run(context.Background(), "version", "--client-only")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "Version:" {
			return f[1]
		}
	}
	return ""
}

// TestVeleroRestoresARestoregraphBackup is the other way round: `restoregraph backup -o
// s3://...` writes the backup where Velero keeps them, with what Velero's backup sync
// reads beside it; `velero backup get` lists it, `velero backup describe --details` and
// `velero backup logs` show it, and `velero restore create` restores it to Completed.
func TestVeleroRestoresARestoregraphBackup(t *testing.T) {
	t.Parallel() // its own control planes and S3 server: beside the other tests that have theirs
	ctx := context.Background()
	s, err := harness.StartS3(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	env := s3Env(t, s)
	const name = "rg-shop"
	src := veleroCluster(t)
	createApp(t, restoreTarget(t, src.Config))
	code, text := cliEnv(t, env, "backup", "-o", "s3://"+s.Bucket+"/"+name, "--s3-endpoint", s.Endpoint, "--include-namespaces", "shop", "--kubeconfig", src.Kubeconfig)
	require.Equal(t, 0, code, text)
	src.Stop()
	for _, f := range []string{name + ".tar.gz", name + "-manifest.json.gz", name + "-resource-list.json.gz", name + "-logs.gz", "velero-backup.json"} {
		assert.FileExists(t, s.Path("backups/"+name+"/"+f))
	}
	b, err := archive.ReadFile(context.Background(), s.Path("backups/"+name+"/"+name+".tar.gz"), archive.Options{})
	require.NoError(t, err)

	dst := veleroCluster(t)
	v, err := dst.StartVelero(ctx, s, harness.VeleroOptions{ReadOnly: true})
	require.NoError(t, err)
	veleroPhase(t, dst, veleroBackups, name, "Completed")
	out, err := v.Run(ctx, "backup", "get")
	require.NoError(t, err, out)
	assert.Contains(t, out, name, "velero backup get lists it")
	out, err = v.Run(ctx, "backup", "describe", name, "--details")
	require.NoError(t, err, out)
	assert.Contains(t, out, "apps/v1/Deployment:", "velero backup describe --details lists its resources")
	assert.Contains(t, out, "shop/web")
	out, err = v.Run(ctx, "backup", "logs", name)
	require.NoError(t, err, out)
	assert.Contains(t, out, "objects (", "velero backup logs shows what restoregraph printed")
	out, err = v.Run(ctx, "restore", "create", name+"-restore", "--from-backup", name, "--wait")
	require.NoError(t, err, out)
	phase := veleroPhase(t, dst, veleroRestores, name+"-restore", "Completed", "PartiallyFailed", "Failed", "FailedValidation")
	if phase != "Completed" {
		describe, _ := v.Run(ctx, "restore", "describe", name+"-restore", "--details")
		t.Log(describe)
	}
	require.Equal(t, "Completed", phase)
	at := standingOf(t, restoreTarget(t, dst.Config), b)
	for _, kind := range []string{"deployments", "statefulsets", "configmaps", "secrets", "services", "cronjobs"} {
		found := false
		for id := range at.present {
			found = found || id.Resource == kind
		}
		assert.True(t, found, "Velero restored the %s of restoregraph's backup", kind)
	}
	t.Logf("Velero restored %d of the %d objects of restoregraph's backup", len(at.present), b.Manifest().Len())

	// Written into Velero's location by name, through the location's own object-store
	// plugin (Velero's AWS plugin) and the location's credentials, none from the
	// environment: refused while the location is ReadOnly, as Velero refuses it; then
	// synced by Velero to Completed and described; never written over.
	env = withoutCredentials(env)
	const second = "rg-shop-by-location"
	byLocation := []string{"backup", "--storage-location", "default", "--name", second, "--plugins", v.PluginDir(),
		"--include-namespaces", "shop", "--kubeconfig", dst.Kubeconfig}
	code, text = cliEnv(t, env, byLocation...)
	assert.Equal(t, 2, code, text)
	assert.Contains(t, text, "backup storage location is read-only: default")
	dyn, err := dynamic.NewForConfig(dst.Config)
	require.NoError(t, err)
	_, err = dyn.Resource(veleroLocations).Namespace("velero").Patch(ctx, "default", types.MergePatchType,
		[]byte(`{"spec":{"accessMode":"ReadWrite"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	code, text = cliEnv(t, env, byLocation...)
	require.Equal(t, 0, code, text)
	for _, f := range []string{second + ".tar.gz", second + "-manifest.json.gz", second + "-resource-list.json.gz", second + "-logs.gz", "velero-backup.json"} {
		assert.FileExists(t, s.Path("backups/"+second+"/"+f))
	}
	veleroPhase(t, dst, veleroBackups, second, "Completed")
	out, err = v.Run(ctx, "backup", "describe", second, "--details")
	require.NoError(t, err, out)
	assert.Contains(t, out, "shop/web", "velero backup describe --details lists what restoregraph wrote through the plugin")
	code, text = cliEnv(t, env, byLocation...)
	assert.Equal(t, 2, code, "never written over\n%s", text)
	assert.Contains(t, text, "a backup of that name is in the location already")

	// restoregraph's restore by name is recorded as Velero records its own: `velero restore
	// get`, `describe --details` and `logs` show it, and Velero's controller leaves it as
	// it is. A name Velero has is refused before anything is restored.
	const restoreName = "rg-shop-to-shop2"
	code, text = cliEnv(t, env, "restore", "--from-backup", name, "--plugins", v.PluginDir(), "--kubeconfig", dst.Kubeconfig,
		"--namespace-mappings", "shop:shop2", "--restore-name", restoreName)
	require.Equal(t, 0, code, text)
	assert.Contains(t, text, "recorded in Velero as restore velero/"+restoreName+" (Completed)")
	out, err = v.Run(ctx, "restore", "get")
	require.NoError(t, err, out)
	assert.Contains(t, out, restoreName)
	out, err = v.Run(ctx, "restore", "describe", restoreName, "--details")
	require.NoError(t, err, out)
	assert.Regexp(t, `Phase:\s+\S*Completed`, out)
	assert.Contains(t, out, "Backup:  "+name)
	assert.Regexp(t, `Namespace mappings:\s+shop=shop2`, out)
	assert.Contains(t, out, "shop2/web(created)", "the resource list, read through Velero's download request")
	out, err = v.Run(ctx, "restore", "logs", restoreName)
	require.NoError(t, err, out)
	assert.Regexp(t, `msg=restored restore=`+regexp.QuoteMeta(restoreName)+` resource=deployments.apps version=v1 namespace=shop name=web targetNamespace=shop2`, out, "the restore's log: a line per object")
	time.Sleep(5 * time.Second)
	assert.Equal(t, "Completed", veleroPhase(t, dst, veleroRestores, restoreName, "Completed", "PartiallyFailed", "Failed", "InProgress", "New"),
		"Velero's restore controller leaves a finished restore as it is")
	code, text = cliEnv(t, env, "restore", "--from-backup", name, "--plugins", v.PluginDir(), "--kubeconfig", dst.Kubeconfig,
		"--namespace-mappings", "shop:shop3", "--restore-name", restoreName)
	assert.Equal(t, 2, code, text)
	assert.Contains(t, text, "velero has a restore of that name: velero/"+restoreName)
	_, err = dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(ctx, "shop3", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "nothing was restored: %v", err)
}

var veleroLocations = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "backupstoragelocations"}

var capiClusters = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "clusters"}

// deleteCluster deletes the Cluster API Cluster of fleet-00 in tgt, and returns how many
// of what it owns in the backup, directly or through other owners, are still there 15 s
// later.
func deleteCluster(t *testing.T, tgt restore.Target, b *archive.Backup) int {
	t.Helper()
	m := b.Manifest()
	owned := map[types.UID]bool{}
	for _, it := range m.Items() {
		if it.Kind == "Cluster" && it.Namespace == "fleet-00" && it.Name == "workload-00" {
			owned[it.UID] = true
		}
	}
	require.Len(t, owned, 1)
	for grew := true; grew; { // the owner chains, to their ends
		grew = false
		for _, it := range m.Items() {
			for _, o := range it.OwnerUIDs {
				if owned[o] && !owned[it.UID] {
					owned[it.UID], grew = true, true
				}
			}
		}
	}
	require.NoError(t, tgt.Dynamic.Resource(capiClusters).Namespace("fleet-00").Delete(context.Background(), "workload-00", metav1.DeleteOptions{}))
	time.Sleep(15 * time.Second)
	left := 0
	present := standingOf(t, tgt, b).present
	for _, it := range m.Items() {
		if _, ok := present[it.ID()]; ok && owned[it.UID] {
			left++
		}
	}
	return left
}

// planWithout reads the JSON of a plan, checks that it names location as where its
// backup is kept, and returns it without that location.
func planWithout(t *testing.T, stdout []byte, location string) map[string]any {
	t.Helper()
	var p map[string]any
	require.NoError(t, json.Unmarshal(stdout, &p))
	backup, _ := p["backup"].(map[string]any)
	require.NotNil(t, backup, "the plan names its backup")
	got, _ := backup["location"].(string)
	assert.Equal(t, location, got)
	delete(backup, "location")
	return p
}
