package test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/restoregraph/restoregraph/bench/clirun"
	"github.com/restoregraph/restoregraph/test/harness"
)

// readLine is what the command says a read from a store took.
var readLine = regexp.MustCompile(`read \S+.*?: (\d+) bytes`)

// BenchmarkIntegrationSources measures what each way of reading a backup costs the
// command: `plan` (its time, and the bytes of the tarball it read from the store) and a
// restore into a fresh kube-apiserver (the time to its first object, its time and peak
// memory), from the file, by s3:// URL, and by name through Velero's own AWS plugin, for
// a backup the real Velero server wrote of a Cluster API fleet of 25 clusters and an
// application namespace, and for restoregraph's backup of the same objects (which
// carries its manifest).
func BenchmarkIntegrationSources(b *testing.B) {
	ctx := context.Background()
	s, err := harness.StartS3(ctx, b.TempDir())
	require.NoError(b, err)
	defer s.Stop()
	const name, clusters = "sources", 25
	sourceWithVelero(b, s, name, clusters)
	env := s3Env(b, s)
	bin, err := cliBinary()
	require.NoError(b, err)

	// Velero's cluster, where its Backups are listed; restoregraph's backup is taken of
	// the same objects restored there.
	vc := veleroCluster(b)
	defer vc.Stop()
	v, err := vc.StartVelero(ctx, s, harness.VeleroOptions{Features: []string{"EnableAPIGroupVersions"}, ReadOnly: true})
	require.NoError(b, err)
	defer vc.StopVelero()
	veleroPhase(b, vc, veleroBackups, name, "Completed")
	_, err = clirun.StartEnv(env, bin, "restore", "--backup", s.Path("backups/"+name+"/"+name+".tar.gz"), "--kubeconfig", vc.Kubeconfig)
	require.NoError(b, err)
	namespaces := []string{"shop"}
	for i := range clusters {
		namespaces = append(namespaces, fmt.Sprintf("fleet-%02d", i))
	}
	rgName := "rg-" + name
	_, err = clirun.StartEnv(env, bin, "backup", "-o", "s3://"+s.Bucket+"/"+rgName, "--s3-endpoint", s.Endpoint,
		"--include-namespaces", strings.Join(namespaces, ","), "--kubeconfig", vc.Kubeconfig)
	require.NoError(b, err)
	veleroPhase(b, vc, veleroBackups, rgName, "Completed")

	for _, backup := range []struct{ label, name string }{{"velero", name}, {"restoregraph", rgName}} {
		tarball := s.Path("backups/" + backup.name + "/" + backup.name + ".tar.gz")
		size := fileSize(b, tarball)
		for _, from := range []struct {
			label string
			args  []string
		}{
			{"file", []string{"--backup", tarball}},
			{"url", []string{"--backup", "s3://" + s.Bucket + "/" + backup.name, "--s3-endpoint", s.Endpoint}},
			{"name", []string{"--from-backup", backup.name, "--plugins", v.PluginDir(), "--source-kubeconfig", vc.Kubeconfig}},
		} {
			b.Run(fmt.Sprintf("backup=%s/from=%s", backup.label, from.label), func(b *testing.B) {
				plan, err := clirun.StartEnv(env, bin, append([]string{"plan", "--kubeconfig", vc.Kubeconfig, "-o", "json"}, from.args...)...)
				require.NoError(b, err)
				if m := readLine.FindSubmatch(plan.Stderr); m != nil { // from a store: what the command says it read
					read, err := strconv.ParseInt(string(m[1]), 10, 64)
					require.NoError(b, err)
					b.ReportMetric(float64(read), "plan-read-B")
				}
				tgt := startCluster(b, harness.Options{})
				started := time.Now()
				run, err := clirun.StartEnv(env, bin, append([]string{"restore", "--kubeconfig", tgt.Kubeconfig, "-o", "json", "--record-in-velero=false"}, from.args...)...)
				require.NoError(b, err)
				tgt.Stop()
				var rep restoreReport
				require.NoError(b, json.Unmarshal(run.Stdout, &rep))
				var created []time.Time
				for _, o := range rep.Objects {
					if !o.Created.IsZero() {
						created = append(created, o.Created)
					}
				}
				require.NotEmpty(b, created)
				b.ReportMetric(plan.Took.Seconds(), "plan-s")
				b.ReportMetric(float64(size), "tarball-B")
				b.ReportMetric(slices.MinFunc(created, func(a, c time.Time) int { return a.Compare(c) }).Sub(started).Seconds(), "first-object-s")
				run.Report(b, len(rep.Objects))
			})
		}
	}
}
