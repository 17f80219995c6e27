// Package clirun builds the restoregraph command and runs it as a user does, measuring
// what a user sees: its wall time and the most memory its process held.
package clirun

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Build builds the command from its module at moduleDir (cmd/restoregraph) into
// restoregraph/bin in the user's cache directory (replacing what an earlier run built),
// and returns the binary's path.
func Build(moduleDir string) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir = filepath.Join(dir, "restoregraph", "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "restoregraph")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = moduleDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the CLI in %s: %v\n%s", moduleDir, err, out)
	}
	return bin, nil
}

// Run is one run of the command.
type Run struct {
	Took   time.Duration
	MaxRSS int64 // bytes: the peak resident memory of its process
	Stdout []byte
}

// Start runs bin with args to its end. A run that fails returns its error with what
// it wrote to standard error.
func Start(bin string, args ...string) (Run, error) {
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		return Run{}, fmt.Errorf("restoregraph %v: %w\n%s", args, err, stderr.Bytes())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return Run{}, fmt.Errorf("no resource usage for the process on this system")
	}
	return Run{Took: took, MaxRSS: ru.Maxrss * 1024, Stdout: stdout.Bytes()}, nil
}

// Metrics are the figures a benchmark reports of a run of objects objects.
type Metrics interface {
	ReportMetric(n float64, unit string)
}

// Report reports the run's seconds, objects per second and peak resident MiB.
func (r Run) Report(m Metrics, objects int) {
	m.ReportMetric(r.Took.Seconds(), "s")
	m.ReportMetric(float64(objects)/r.Took.Seconds(), "objects/s")
	m.ReportMetric(float64(r.MaxRSS)/(1<<20), "peak-RSS-MiB")
}
