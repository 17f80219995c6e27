package test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/bench/clirun"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/test/harness"
)

const cliObjects = 100_000

// BenchmarkIntegrationCLIRestore restores a generated Velero backup of 100,000
// application objects (namespaces of Deployments, ReplicaSets, Pods, Services,
// ConfigMaps, Secrets, ServiceAccounts and RoleBindings) into a real API server of its
// own with the restoregraph command, as a user runs it with client-go's limits raised,
// and reports the command's wall time, objects per second and peak resident memory.
func BenchmarkIntegrationCLIRestore(b *testing.B) {
	bin, err := clirun.Build(filepath.Join("..", "cmd", "restoregraph"))
	if err != nil {
		b.Fatal(err)
	}
	backup := filepath.Join(b.TempDir(), "apps.tar.gz")
	f, err := os.Create(backup)
	if err != nil {
		b.Fatal(err)
	}
	n, err := workload.WriteApps(f, cliObjects, 1)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatal(err)
	}
	var last clirun.Run
	for b.Loop() {
		b.StopTimer()
		// A Service range for the backup's 10,000 Services: one per ten objects.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		c, err := harness.StartWith(ctx, b.TempDir(), harness.Binaries{}, harness.Options{ServiceCIDR: "10.96.0.0/16"})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		last, err = clirun.Start(bin, "restore", "--backup", backup, "--kubeconfig", c.Kubeconfig,
			"--client-qps", "1e9", "--client-burst", "1000000000")
		b.StopTimer()
		c.Stop()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	last.Report(b, n)
}
