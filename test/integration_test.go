package test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/baseline"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/memcluster/contract"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
	"github.com/restoregraph/restoregraph/versionselect"
)

var cluster *harness.Cluster

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	if os.Getenv(admissionChildEnv) != "" {
		os.Exit(runAdmissionChild())
	}
	dir, err := os.MkdirTemp("", "restoregraph-integration")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cluster, err = harness.Start(ctx, dir, harness.Binaries{})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: cannot start the control plane:", err)
		if cluster != nil {
			fmt.Fprintln(os.Stderr, cluster.Log("kube-apiserver"))
		}
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "--- kube-controller-manager log (tail) ---")
		log := cluster.Log("kube-controller-manager")
		fmt.Fprintln(os.Stderr, log[max(0, len(log)-4000):])
	}
	cluster.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

func cfg() *rest.Config { return rest.CopyConfig(cluster.Config) }

// TestContract runs the memcluster contract, unchanged, against the real API server.
func TestContract(t *testing.T) {
	contract.Run(t, cfg(), "real", contract.Options{GC: true, VolumeBinder: true, Timeout: 90 * time.Second})
}

// seedOf gives each namespace prefix its own seed, so that two generated backups never
// share a UID.
func seedOf(prefix string) uint64 {
	seed := uint64(0)
	for _, c := range prefix {
		seed = seed*31 + uint64(c)
	}
	return seed
}

// capi generates a fleet whose namespaces start with prefix.
func capi(t testing.TB, prefix string, clusters int) *archive.Backup {
	var buf bytes.Buffer
	require.NoError(t, workload.CAPI(workload.CAPIOptions{Clusters: clusters, Seed: seedOf(prefix), Prefix: prefix}).Write(&buf))
	b, err := archive.Read(context.Background(), &buf, archive.Options{})
	require.NoError(t, err)
	return b
}

// namespacedPresent verifies the backup's restore and counts its namespaced objects (and
// Namespaces) present in the target, whatever made them. CRDs are shared by the runs.
func namespacedPresent(t testing.TB, b *archive.Backup) (present, total int) {
	v, err := verify(restoreTarget(t, cfg()), b)
	require.NoError(t, err)
	for _, o := range v.Objects {
		if o.Namespace == "" && o.Kind != "Namespace" {
			continue
		}
		total++
		if o.Verdict != restore.Missing {
			present++
		}
	}
	return present, total
}

// TestCAPIRestoreWithTheRealGarbageCollector restores a Cluster API backup with the
// real garbage collector running, and the same backup with owner references copied
// verbatim.
func TestCAPIRestoreWithTheRealGarbageCollector(t *testing.T) {
	ctx := context.Background()
	b := capi(t, "graph", 3)
	rep, err := restore.Run(ctx, b, restoreTarget(t, cfg()), restore.PlanOptions{}, restore.RunOptions{Workers: 16})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Summary)

	naive := capi(t, "naive", 3)
	nrep, err := restore.Run(ctx, naive, restoreTarget(t, cfg()), restore.PlanOptions{Extensions: baseline.CopyOwnerReferences(restore.Extensions{})}, restore.RunOptions{Workers: 16})
	require.NoError(t, err)
	require.True(t, nrep.OK(), "%v", nrep.Summary)

	// Give the collector time to act: it deletes a dependent whose owners are gone within
	// seconds of seeing it.
	var naivePresent, naiveTotal int
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		naivePresent, naiveTotal = namespacedPresent(t, naive)
		if naivePresent < naiveTotal-50 {
			break
		}
		time.Sleep(time.Second)
	}
	time.Sleep(5 * time.Second) // and a little longer, for the graph restore too

	assertOnce(t, b, rep)
	graphPresent, graphTotal := namespacedPresent(t, b)
	naivePresent, naiveTotal = namespacedPresent(t, naive)
	t.Logf("objects lost to the real garbage collector: restoregraph %d of %d, owner references copied verbatim %d of %d",
		graphTotal-graphPresent, graphTotal, naiveTotal-naivePresent, naiveTotal)
	assert.Equal(t, graphTotal, graphPresent)
	assert.Less(t, naivePresent, naiveTotal, "the naive restore loses objects to the collector")
}

// TestVersionSelectionAgainstRealCRDs: a CRD whose spec.versions are listed lowest
// priority first, served at three versions; and a backup that carries its CRD.
func TestVersionSelectionAgainstRealCRDs(t *testing.T) {
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(cfg())
	require.NoError(t, err)
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	version := func(name string, storage bool) map[string]any {
		return map[string]any{"name": name, "served": true, "storage": storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gizmos.versions.restoregraph.dev"},
		"spec": map[string]any{"group": "versions.restoregraph.dev", "scope": "Namespaced",
			"names":    map[string]any{"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
			"versions": []any{version("v1alpha1", false), version("v1beta1", true), version("v1", false)}},
	}}
	_, err = dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{})
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(cfg())
	require.NoError(t, err)
	gr := schema.GroupResource{Group: "versions.restoregraph.dev", Resource: "gizmos"}
	var target versionselect.Target
	require.Eventually(t, func() bool {
		target, err = versionselect.Discover(ctx, disc)
		return err == nil && len(target[gr].Versions) == 3
	}, 60*time.Second, 200*time.Millisecond)
	assert.Equal(t, "v1", target[gr].Preferred, "the real server prefers v1 whatever the order of spec.versions")
	assert.Equal(t, []string{"v1", "v1beta1", "v1alpha1"}, target[gr].Versions)

	c := versionselect.Choose(gr, versionselect.Versions{Versions: []string{"v1beta1", "v1alpha1"}, Preferred: "v1beta1"},
		versionselect.Versions{Versions: target[gr].Versions, Preferred: target[gr].Preferred}, nil)
	assert.Equal(t, "v1beta1", c.Version)
	assert.Equal(t, versionselect.RuleSourcePreferred, c.Rule)

	// A backup that carries its CRD, not yet in the target: planned from the CRD.
	b := capi(t, "versions", 1)
	p, err := restore.NewPlan(ctx, b, restoreTarget(t, cfg()), restore.PlanOptions{})
	require.NoError(t, err)
	for _, v := range p.Versions {
		if v.Group == "cluster.x-k8s.io" && v.Resource == "machines" {
			assert.Equal(t, "v1beta1", v.Version)
			if v.TargetFromCRD == "" {
				assert.Equal(t, []string{"v1beta1", "v1alpha4"}, v.TargetVersions, "served already by an earlier test's restore")
			} else {
				assert.Equal(t, "machines.cluster.x-k8s.io", v.TargetFromCRD)
			}
		}
	}
}

const childEnv = "RESTOREGRAPH_INTEGRATION_CHILD"

// runChild restores the backup and journal named in the environment; the parent kills it.
func runChild() int {
	b, err := archive.ReadFile(context.Background(), os.Getenv("CHILD_BACKUP"), archive.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c := &rest.Config{Host: os.Getenv("CHILD_HOST"), BearerToken: os.Getenv("CHILD_TOKEN"), TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 50, Burst: 50}
	tgt, err := restore.NewTarget(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	journal, err := restore.OpenJournal(os.Getenv("CHILD_JOURNAL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer journal.Close()
	_, err = restore.Run(context.Background(), b, tgt, restore.PlanOptions{}, restore.RunOptions{Workers: 2, Journal: journal})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestSIGKILLAndResume kills a process in the middle of a restore, then resumes with
// its journal: nothing twice, nothing lost.
func TestSIGKILLAndResume(t *testing.T) {
	dir := t.TempDir()
	backupPath := filepath.Join(dir, "backup.tar.gz")
	f, err := os.Create(backupPath)
	require.NoError(t, err)
	require.NoError(t, workload.CAPI(workload.CAPIOptions{Clusters: 4, Seed: 9, Prefix: "killed"}).Write(f))
	f.Close()
	journal := filepath.Join(dir, "journal")

	child := exec.Command(os.Args[0], "-test.run=^$")
	c := cfg()
	child.Env = append(os.Environ(), childEnv+"=1", "CHILD_BACKUP="+backupPath, "CHILD_JOURNAL="+journal,
		"CHILD_HOST="+c.Host, "CHILD_TOKEN="+c.BearerToken)
	var stderr bytes.Buffer
	child.Stderr = &stderr
	child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, child.Start())
	require.Eventually(t, func() bool {
		data, _ := os.ReadFile(journal)
		return strings.Count(string(data), "\n") >= 40
	}, 120*time.Second, 10*time.Millisecond, "the child restores: %s", &stderr)
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	child.Wait()
	data, _ := os.ReadFile(journal)
	killedAt := strings.Count(string(data), "\n")

	b, err := archive.ReadFile(context.Background(), backupPath, archive.Options{})
	require.NoError(t, err)
	require.Less(t, killedAt, b.Manifest().Len(), "killed before the end")
	j, err := restore.OpenJournal(journal)
	require.NoError(t, err)
	defer j.Close()
	rep, err := restore.Run(context.Background(), b, restoreTarget(t, cfg()), restore.PlanOptions{}, restore.RunOptions{Workers: 8, Journal: j})
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Summary)
	fromJournal := 0
	for o := range rep.Objects() {
		if o.FromJournal {
			fromJournal++
		}
	}
	t.Logf("killed after %d journal records of %d objects; resumed: %d from the journal", killedAt, b.Manifest().Len(), fromJournal)
	assertOnce(t, b, rep)
}

// assertOnce verifies the restore: every object in the target as the restore makes it
// (the CRDs an earlier test restored are adopted), every ownerReference live.
func assertOnce(t *testing.T, b *archive.Backup, rep *restore.Report) {
	t.Helper()
	v, err := verify(restoreTarget(t, cfg()), b)
	require.NoError(t, err)
	for _, o := range v.Objects {
		assert.Equal(t, restore.Verified, o.Verdict, "%s %s/%s: %v", o.Kind, o.Namespace, o.Name, o.Problems)
	}
	assert.Len(t, v.Objects, rep.Len())
}

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

// restoreTarget returns the restore target reached through c.
func restoreTarget(t testing.TB, c *rest.Config) restore.Target {
	t.Helper()
	tgt, err := restore.NewTarget(c)
	require.NoError(t, err)
	return tgt
}

// verify plans the restore of b into tgt and verifies it.
func verify(tgt restore.Target, b restore.Backup) (*restore.VerifyReport, error) {
	p, err := restore.NewPlan(context.Background(), b, tgt, restore.PlanOptions{})
	if err != nil {
		return nil, err
	}
	return restore.Verify(context.Background(), p, tgt, restore.RunOptions{})
}
