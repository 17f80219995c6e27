// Package clirun builds the restoregraph command and runs it as a user does, measuring
// what a user sees: its wall time, the most memory its process held and the CPU it used.
package clirun

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// Build builds the command from its module at moduleDir (cmd/restoregraph) into
// restoregraph/bin/TREE in the user's cache directory, TREE named by moduleDir's
// absolute path (replacing what an earlier run from there built), with peakrss beside
// it, and returns the command's path. Benchmarks of two clones run side by side each
// run their own build.
func Build(moduleDir string) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	if dir, err = binDir(dir, moduleDir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "restoregraph")
	for _, b := range [][2]string{{bin, "."}, {peakRSS(bin), "github.com/restoregraph/restoregraph/bench/clirun/peakrss"}} {
		cmd := exec.Command("go", "build", "-o", b[0], b[1])
		cmd.Dir = moduleDir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("building %s in %s: %v\n%s", b[1], moduleDir, err, out)
		}
	}
	return bin, nil
}

// binDir is where Build puts what it builds from moduleDir, under the cache directory.
func binDir(cache, moduleDir string) (string, error) {
	abs, err := filepath.Abs(moduleDir)
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "restoregraph", "bin", fmt.Sprintf("%x", sha256.Sum256([]byte(abs)))[:16]), nil
}

// peakRSS is where Build puts peakrss, beside bin.
func peakRSS(bin string) string { return filepath.Join(filepath.Dir(bin), "restoregraph-peakrss") }

// Run is one run of the command.
type Run struct {
	Took   time.Duration
	MaxRSS int64         // bytes: the peak resident memory of its process
	CPU    time.Duration // its process's CPU time, user and system
	Stdout []byte
	Stderr []byte
}

// Start runs bin, built by Build, with args to its end, through peakrss so that the
// peak memory and the CPU time measured are the command's own. A run that fails returns
// its error with what it wrote to standard error.
func Start(bin string, args ...string) (Run, error) { return start("", nil, bin, args) }

// StartEnv is Start with env ("KEY=value" entries) added to the environment the command
// inherits; a later entry for a variable wins.
func StartEnv(env []string, bin string, args ...string) (Run, error) {
	return start("", env, bin, args)
}

// StartIn is Start within the cgroup cgroup (a directory of the cgroup file system, as
// MemoryCgroup makes), from the command's first instruction; "" is Start's own cgroup.
func StartIn(cgroup, bin string, args ...string) (Run, error) {
	return start(cgroup, nil, bin, args)
}

func start(cgroup string, env []string, bin string, args []string) (Run, error) {
	peakR, peakW, err := os.Pipe()
	if err != nil {
		return Run{}, err
	}
	defer peakR.Close()
	peakArgs := append([]string{bin}, args...)
	if cgroup != "" {
		peakArgs = append([]string{"-cgroup", cgroup}, peakArgs...)
	}
	cmd := exec.Command(peakRSS(bin), peakArgs...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = &stdout, &stderr, []*os.File{peakW}
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	peakW.Close()
	if err != nil {
		return Run{}, fmt.Errorf("restoregraph %v: %w\n%s", args, err, stderr.Bytes())
	}
	var peak, user, sys int64
	if _, err := fmt.Fscan(peakR, &peak, &user, &sys); err != nil {
		return Run{}, fmt.Errorf("no peak memory and CPU time for the process on this system: %w", err)
	}
	return Run{Took: took, MaxRSS: peak, CPU: time.Duration(user + sys), Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}, nil
}

// Metrics are the figures a benchmark reports of a run of objects objects.
type Metrics interface {
	ReportMetric(n float64, unit string)
}

// Report reports the run's seconds, objects per second, peak resident MiB and CPU
// seconds.
func (r Run) Report(m Metrics, objects int) {
	m.ReportMetric(r.Took.Seconds(), "s")
	m.ReportMetric(r.CPU.Seconds(), "cpu-s")
	m.ReportMetric(float64(objects)/r.Took.Seconds(), "objects/s")
	m.ReportMetric(float64(r.MaxRSS)/(1<<20), "peak-RSS-MiB")
}

// MemoryCgroup makes a cgroup named name whose processes may hold limit bytes of memory
// in all (anonymous and page cache), as a container's limit does: in cgroup v2's
// hierarchy at /sys/fs/cgroup (memory.max) or v1's memory controller at
// /sys/fs/cgroup/memory (memory.limit_in_bytes). It returns its directory and a
// function that removes it once its processes have ended; an error where neither can
// be made (not root, no memory controller).
func MemoryCgroup(name string, limit int64) (dir string, remove func() error, err error) {
	const root = "/sys/fs/cgroup"
	var file string
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		dir, file = filepath.Join(root, name), "memory.max"
	} else if _, err := os.Stat(filepath.Join(root, "memory", "memory.limit_in_bytes")); err == nil {
		dir, file = filepath.Join(root, "memory", name), "memory.limit_in_bytes"
	} else {
		return "", nil, fmt.Errorf("no cgroup memory controller at %s", root)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", nil, err
	}
	remove = func() error { return os.Remove(dir) }
	if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
		remove()
		return "", nil, fmt.Errorf("limiting cgroup %s: %w", dir, err)
	}
	return dir, remove, nil
}
