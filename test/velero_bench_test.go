package test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/clirun"
	"github.com/restoregraph/restoregraph/test/harness"
	"github.com/stretchr/testify/require"
)

// BenchmarkIntegrationVelero restores one backup that the real Velero server wrote of the
// application namespace and a Cluster API fleet (25 and 250 workload clusters: about
// 1,100 and 10,300 objects) twice, each into a fresh cluster whose controllers run: with
// `velero restore create --wait` and with the restoregraph command, default flags. It
// reports each wall time, their ratio, and the ownership links of the backup each holds
// once the controllers have acted.
func BenchmarkIntegrationVelero(b *testing.B) {
	for _, clusters := range []int{25, 250} {
		b.Run(fmt.Sprintf("fleet=%d", clusters), func(b *testing.B) {
			for range b.N {
				benchVelero(b, clusters)
			}
		})
	}
}

func benchVelero(b *testing.B, clusters int) {
	ctx := context.Background()
	s, err := harness.StartS3(ctx, b.TempDir())
	require.NoError(b, err)
	defer s.Stop()
	name := fmt.Sprintf("fleet-%d", clusters)
	tarball := sourceWithVelero(b, s, name, clusters)
	bk, err := archive.ReadFile(context.Background(), tarball, archive.Options{})
	require.NoError(b, err)
	objects := bk.Manifest().Len()

	vc := veleroCluster(b)
	v, err := vc.StartVelero(ctx, s, harness.VeleroOptions{Features: []string{"EnableAPIGroupVersions"}, ReadOnly: true})
	require.NoError(b, err)
	veleroPhase(b, vc, veleroBackups, name, "Completed")
	started := time.Now()
	out, err := v.Run(ctx, "restore", "create", name+"-restore", "--from-backup", name, "--wait")
	veleroTook := time.Since(started)
	require.NoError(b, err, out)
	phase := veleroPhase(b, vc, veleroRestores, name+"-restore", "Completed", "PartiallyFailed", "Failed", "FailedValidation")
	require.Equal(b, "Completed", phase)
	vc.StopVelero()

	rc := veleroCluster(b)
	bin, err := cliBinary()
	require.NoError(b, err)
	run, err := clirun.Start(bin, "restore", "--backup", tarball, "--kubeconfig", rc.Kubeconfig, "-o", "json")
	require.NoError(b, err)
	var report restoreReport
	require.NoError(b, json.Unmarshal(run.Stdout, &report))

	time.Sleep(15 * time.Second) // the controllers adopt and the garbage collector collects
	veleroEnd := standingOf(b, restoreTarget(b, vc.Config), bk)
	rgEnd := standingOf(b, restoreTarget(b, rc.Config), bk)
	vc.Stop()
	rc.Stop()

	b.ReportMetric(float64(objects), "objects")
	b.ReportMetric(veleroTook.Seconds(), "velero-s")
	b.ReportMetric(run.Took.Seconds(), "restoregraph-s")
	b.ReportMetric(veleroTook.Seconds()/run.Took.Seconds(), "speedup")
	// A link counts where owner and dependent are both in the target: a Pod its
	// ReplicaSet replaced is not judged.
	b.ReportMetric(float64(veleroEnd.kept), "velero-links-kept")
	b.ReportMetric(float64(len(veleroEnd.lost)), "velero-links-lost")
	b.ReportMetric(float64(rgEnd.kept), "restoregraph-links-kept")
	b.ReportMetric(float64(len(rgEnd.lost)+rgEnd.wrong), "restoregraph-links-lost")
	b.Logf("%d objects: velero restore create %s, restoregraph %s (%.1fx); links kept/lost: Velero %d/%d, restoregraph %d/%d",
		objects, veleroTook.Round(10*time.Millisecond), run.Took.Round(10*time.Millisecond), veleroTook.Seconds()/run.Took.Seconds(),
		veleroEnd.kept, len(veleroEnd.lost), rgEnd.kept, len(rgEnd.lost)+rgEnd.wrong)
}

// BenchmarkIntegrationVeleroManagedFields restores the backup the real Velero server
// wrote of 250 Cluster API clusters (about 10,500 objects, every one with managed fields)
// with the restoregraph command into fresh clusters, in turns: with its default flags,
// without the managed fields' patch, and with the patch and twice the workers. Each
// restore's time, its own CPU and its API server's and etcd's, and the creates and
// patches that server served, say what the patch costs and whether it is the server's
// work or a wait.
func BenchmarkIntegrationVeleroManagedFields(b *testing.B) {
	ctx := context.Background()
	s, err := harness.StartS3(ctx, b.TempDir())
	require.NoError(b, err)
	defer s.Stop()
	tarball := sourceWithVelero(b, s, "fleet-250", 250)
	bin, err := cliBinary()
	require.NoError(b, err)
	sides := []struct {
		name  string
		flags []string
	}{
		{"default", nil},
		{"without-patch", []string{"--disable-plugin", "restoregraph.dev/managed-fields"}},
		{"workers=32", []string{"--workers", "32"}},
	}
	took := make([]time.Duration, len(sides))
	for range b.N {
		for i, side := range sides {
			c := veleroCluster(b)
			before := serverCPU(b, c)
			run, err := clirun.Start(bin, append([]string{"restore", "--backup", tarball, "--kubeconfig", c.Kubeconfig, "-o", "json"}, side.flags...)...)
			require.NoError(b, err)
			after := serverCPU(b, c)
			served := serverRequests(b, c)
			c.Stop()
			took[i] += run.Took
			var creates, patches float64
			for req, n := range served {
				switch {
				case strings.HasPrefix(req, "POST "):
					creates += n
				case strings.HasPrefix(req, "PATCH "):
					patches += n
				}
			}
			b.Logf("%s: %.2f s, the command %.2f CPU s, the API server %.1f, etcd %.1f; %.0f creates, %.0f patches", side.name,
				run.Took.Seconds(), run.CPU.Seconds(), (after["kube-apiserver"] - before["kube-apiserver"]).Seconds(),
				(after["etcd"] - before["etcd"]).Seconds(), creates, patches)
		}
	}
	for i, side := range sides {
		b.ReportMetric(took[i].Seconds()/float64(b.N), side.name+"-s")
	}
	b.ReportMetric(took[0].Seconds()/took[1].Seconds(), "default/without-patch")
}
