package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/restoregraph/restoregraph/bench/clirun"
	"github.com/restoregraph/restoregraph/memcluster"
)

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

// cliBinary builds the restoregraph command once per test binary.
func cliBinary(b *testing.B) string {
	b.Helper()
	cliOnce.Do(func() { cliPath, cliErr = clirun.Build(filepath.Join("..", "cmd", "restoregraph")) })
	if cliErr != nil {
		b.Fatal(cliErr)
	}
	return cliPath
}

// runCLI runs the CLI with args.
func runCLI(b *testing.B, args ...string) clirun.Run {
	b.Helper()
	r, err := clirun.Start(cliBinary(b), args...)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// kubeconfigFor writes a kubeconfig for the memcluster s into dir.
func kubeconfigFor(b *testing.B, s *memcluster.Server, dir string) string {
	b.Helper()
	path := filepath.Join(dir, "kubeconfig")
	const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: mem, cluster: {server: %q}}]
users: [{name: mem, user: {}}]
contexts: [{name: mem, context: {cluster: mem, user: mem}}]
current-context: mem
`
	if err := os.WriteFile(path, fmt.Appendf(nil, kubeconfig, s.Config().Host), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkCLIPlan runs `restoregraph plan --embedded -o text` on the generated backups
// of 100k and a million objects, with and without a carried manifest, and reports the
// command's wall time, objects per second and peak resident memory (the whole process:
// reading, planning, printing).
func BenchmarkCLIPlan(b *testing.B) {
	for _, n := range scaleSizes {
		for _, carried := range []bool{false, true} {
			name := fmt.Sprintf("objects=%d/manifest=%t", n, carried)
			b.Run(name, func(b *testing.B) {
				path := appsTarball(b, n, carried)
				cliBinary(b)
				var last clirun.Run
				for b.Loop() {
					last = runCLI(b, "plan", "--backup", path, "--embedded", "-o", "text")
				}
				if lines := bytes.Count(last.Stdout, []byte("\n")); lines < n {
					b.Fatalf("the plan printed %d lines for %d objects", lines, n)
				}
				last.Report(b, n)
			})
		}
	}
}

// BenchmarkCLIRestore runs `restoregraph restore` of the generated backups of 100k and a
// million objects into a memcluster served from this process (so that the CLI's own
// memory is measured apart from the target's), unthrottled, and reports the command's
// wall time, objects per second and peak resident memory. Admission is the in-process
// one: memcluster does not speak the protobuf the cluster admitter's typed client sends.
func BenchmarkCLIRestore(b *testing.B) {
	for _, n := range scaleSizes {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			path := appsTarball(b, n, false)
			cliBinary(b) // built outside the timed loop
			var last clirun.Run
			for b.Loop() {
				b.StopTimer()
				// A /12 range, as large clusters use: one Service per ten objects.
				s, err := memcluster.StartServer(memcluster.Options{ServiceCIDR: "10.96.0.0/12"})
				if err != nil {
					b.Fatal(err)
				}
				kubeconfig := kubeconfigFor(b, s, b.TempDir())
				b.StartTimer()
				last = runCLI(b, "restore", "--backup", path, "--kubeconfig", kubeconfig,
					"--client-qps", "1e9", "--client-burst", "1000000000", "--admission", "local")
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
			last.Report(b, n)
		})
	}
}

// BenchmarkCLIRestoreEmbedded runs `restoregraph restore --embedded`, default flags, of
// the generated backups of 100k and a million objects, and reports the command's wall
// time, objects per second and peak resident memory: the whole process, the embedded
// server and what it stores included, from reading the tarball to the report. Beside
// each, store=memory runs it with the embedded server's JSON kept in memory
// (--embedded-data-dir=), not in its data file.
func BenchmarkCLIRestoreEmbedded(b *testing.B) {
	for _, n := range scaleSizes {
		for _, variant := range []string{"", "store=memory", "memory=1GiB"} {
			name := fmt.Sprintf("objects=%d", n)
			args := []string{"restore", "--backup", "", "--embedded"}
			var limit int64
			switch variant {
			case "store=memory":
				args = append(args, "--embedded-data-dir=")
			case "memory=1GiB":
				limit = 1 << 30
			}
			if variant != "" {
				name += "," + variant
			}
			b.Run(name, func(b *testing.B) { benchCLIRestoreEmbedded(b, n, limit, args) })
		}
	}
}

// benchCLIRestoreEmbedded runs the CLI with args, whose third is the backup: the
// generated one of n objects. With a limit, the CLI runs in a memory cgroup of that many
// bytes, as in a container of that size (it sets its soft memory limit from it); the
// benchmark is skipped where no such cgroup can be made.
func benchCLIRestoreEmbedded(b *testing.B, n int, limit int64, args []string) {
	args[2] = appsTarball(b, n, false)
	bin := cliBinary(b)
	cgroup := ""
	if limit > 0 {
		dir, remove, err := clirun.MemoryCgroup(fmt.Sprintf("restoregraph-bench-%d", os.Getpid()), limit)
		if err != nil {
			b.Skipf("no memory cgroup of %d bytes: %v", limit, err)
		}
		b.Cleanup(func() {
			if err := remove(); err != nil {
				b.Errorf("removing the cgroup: %v", err)
			}
		})
		cgroup = dir
	}
	var last clirun.Run
	for b.Loop() {
		r, err := clirun.StartIn(cgroup, bin, args...)
		if err != nil {
			b.Fatal(err) // one the kernel killed for its memory: "peakrss: ...: killed"
		}
		last = r
	}
	// "N objects in D: N restored", and nothing else.
	m := everyObjectRestored.FindSubmatch(last.Stdout)
	if m == nil || !bytes.Equal(m[1], m[2]) {
		b.Fatalf("not every object was restored: %s", last.Stdout)
	}
	if restored, _ := strconv.Atoi(string(m[1])); restored < n {
		b.Fatalf("%d objects restored of a backup of %d and more", restored, n)
	}
	last.Report(b, n)
}

var everyObjectRestored = regexp.MustCompile(`^(\d+) objects in \S+: (\d+) restored\n$`)
