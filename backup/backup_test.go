package backup

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

func server(t *testing.T) (*memcluster.Server, restore.Target, Source) {
	s, err := memcluster.StartServer(memcluster.Options{})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	tgt, err := restore.NewTarget(s.Config())
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(s.Config())
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(s.Config())
	require.NoError(t, err)
	return s, tgt, Source{Dynamic: dyn, Discovery: disc}
}

// entries lists a tarball's entry names.
func entries(t *testing.T, data []byte) []string {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	var out []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out = append(out, h.Name)
	}
}

// restoredShop restores the real application backup of testdata into an embedded
// server, and returns the restore's report and the server as a backup's source.
func restoredShop(t *testing.T) (*restore.Report, Source) {
	shop, err := archive.ReadFile(context.Background(), "../testdata/backups/shop-k8s-1.37.tar.gz", archive.Options{})
	require.NoError(t, err)
	_, first, src := server(t)
	rep, err := restore.Run(context.Background(), shop, first, restore.PlanOptions{}, restore.RunOptions{})
	require.NoError(t, err)
	require.True(t, rep.OK())
	return rep, src
}

func TestBackupRestoreVerify(t *testing.T) {
	ctx := context.Background()
	rep, src := restoredShop(t)

	var buf bytes.Buffer
	res, err := Run(ctx, src, &buf, Options{Filter: filter.Spec{IncludeNamespaces: []string{"shop"}}, PageSize: 4, SpillDir: t.TempDir()})
	require.NoError(t, err)
	require.Empty(t, res.Incomplete)
	assert.Equal(t, rep.Count(restore.Restored), res.Objects, "what was restored, backed up again")
	assert.Greater(t, res.Copies, res.Objects, "HPAs at autoscaling v1 and v2")

	// The layout Velero reads: metadata/version, the resources/ tree with every version and
	// the preferred one marked, and the unversioned copy format 1.0 readers take; the
	// manifest first.
	names := entries(t, buf.Bytes())
	assert.Equal(t, []string{"metadata/version", archive.ManifestPath}, names[:2])
	for _, want := range []string{
		"resources/configmaps/namespaces/shop/settings.json",
		"resources/configmaps/v1-preferredversion/namespaces/shop/settings.json",
		"resources/horizontalpodautoscalers.autoscaling/v2-preferredversion/namespaces/shop/web.json",
		"resources/horizontalpodautoscalers.autoscaling/v1/namespaces/shop/web.json",
		"resources/namespaces/cluster/shop.json",
	} {
		assert.Contains(t, names, want)
	}
	for _, n := range names {
		assert.False(t, strings.Contains(n, "/cluster/") && !strings.HasPrefix(n, "resources/namespaces/"),
			"cluster-scoped resources are left out with one namespace included: %s", n)
	}

	b, err := archive.Read(context.Background(), bytes.NewReader(buf.Bytes()), archive.Options{})
	require.NoError(t, err)
	assert.Empty(t, b.Warnings())
	assert.Equal(t, res.Manifest.Len(), b.Manifest().Len(), "the reader took the manifest")
	hpa, _ := b.Resource(schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"})
	assert.Equal(t, []string{"v2", "v1"}, hpa.Versions)

	_, second, _ := server(t)
	plan, err := restore.NewPlan(ctx, b, second, restore.PlanOptions{})
	require.NoError(t, err)
	rep, err = restore.Apply(ctx, plan, second, restore.RunOptions{})
	require.NoError(t, err)
	require.True(t, rep.OK())
	v, err := restore.Verify(ctx, plan, second, restore.RunOptions{})
	require.NoError(t, err)
	assert.True(t, v.OK(), "%v", v.Summary)

	// Break one object: verify names it.
	require.NoError(t, second.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("shop").
		Delete(ctx, "settings", metav1.DeleteOptions{}))
	v, err = restore.Verify(ctx, plan, second, restore.RunOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, v.Summary[restore.Missing])
}

// A backup is planned from its manifest: the CRDs' bodies come first, and planning
// reads them and nothing after.
func TestPlanReadsOnlyTheCRDs(t *testing.T) {
	ctx := context.Background()
	var fleet bytes.Buffer
	require.NoError(t, workload.CAPI(workload.CAPIOptions{Clusters: 1, Seed: 1}).Write(&fleet))
	in, err := archive.Read(context.Background(), bytes.NewReader(fleet.Bytes()), archive.Options{})
	require.NoError(t, err)
	_, first, src := server(t)
	rep, err := restore.Run(ctx, in, first, restore.PlanOptions{}, restore.RunOptions{})
	require.NoError(t, err)
	require.True(t, rep.OK())

	path := filepath.Join(t.TempDir(), "fleet.tar.gz")
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = Run(ctx, src, f, Options{SpillDir: t.TempDir()})
	require.NoError(t, err)
	require.NoError(t, f.Close())
	names := entries(t, must(os.ReadFile(path)))
	crds := 0
	for _, n := range names[2:] {
		if !strings.HasPrefix(n, "resources/customresourcedefinitions.apiextensions.k8s.io/") {
			break
		}
		crds++
	}
	assert.Positive(t, crds, "the CRDs right after the manifest")

	b, err := archive.ReadFile(context.Background(), path, archive.Options{})
	require.NoError(t, err)
	defer b.Close()
	_, second, _ := server(t)
	plan, err := restore.NewPlan(ctx, b, second, restore.PlanOptions{})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, plan.Len(), in.Manifest().Len())
	for _, v := range plan.Versions {
		assert.NotEqual(t, "NotServed", v.Rule, "%s.%s: the backup's CRDs serve it", v.Resource, v.Group)
	}
	assert.True(t, b.Pending(), "no body but the CRDs' was read")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A resource whose list fails makes the backup incomplete, by name; the rest is written.
func TestBrokenListIsReported(t *testing.T) {
	s, err := memcluster.StartServer(memcluster.Options{Faults: &memcluster.Faults{Seed: 1, InternalError: 1,
		Only: func(method, path string) bool { return strings.Contains(path, "/secrets") }}})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	dyn, _ := dynamic.NewForConfig(s.Config())
	disc, _ := discovery.NewDiscoveryClientForConfig(s.Config())
	var buf bytes.Buffer
	res, err := Run(context.Background(), Source{Dynamic: dyn, Discovery: disc}, &buf, Options{})
	require.NoError(t, err)
	require.NotEmpty(t, res.Incomplete)
	assert.Equal(t, "secrets", res.Incomplete[0].Resource.Resource)
}

func TestUnknownResource(t *testing.T) {
	_, _, src := server(t)
	_, err := Run(context.Background(), src, io.Discard, Options{Filter: filter.Spec{IncludeResources: []string{"gizmos"}}})
	var ue *filter.UnknownResourceError
	assert.ErrorAs(t, err, &ue)
}

// A backup reads what it backs up: it waits while a restore writes it, and runs beside
// one that writes elsewhere.
func TestBackupAdmittedAsAReader(t *testing.T) {
	ctx := context.Background()
	_, src := restoredShop(t)

	var adm admission.Local
	writing, err := adm.Admit(ctx, admission.Operation{ID: "restore-elsewhere", Kind: "restore",
		Writes: manifest.NewSet(manifest.ID{Resource: "configmaps", Namespace: "other", Name: "x"})})
	require.NoError(t, err)
	defer writing()
	res, err := Run(ctx, src, io.Discard, Options{Admitter: &adm, Name: "nightly", Filter: filter.Spec{IncludeNamespaces: []string{"shop"}}})
	require.NoError(t, err, "a restore elsewhere does not hold the backup")
	assert.Positive(t, res.Objects)

	holding, err := adm.Admit(ctx, admission.Operation{ID: "restore-shop", Kind: "restore",
		Writes: manifest.NewSet(manifest.ID{Resource: "configmaps", Namespace: "shop", Name: "settings"})})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, src, io.Discard, Options{Admitter: &adm, Name: "nightly-2", Filter: filter.Spec{IncludeNamespaces: []string{"shop"}}})
		done <- err
	}()
	select {
	case <-done:
		t.Fatal("the backup read what a restore was writing")
	case <-time.After(100 * time.Millisecond):
	}
	holding()
	require.NoError(t, <-done)
}
