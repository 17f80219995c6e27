package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/restoregraph/restoregraph/bench/workload"
)

// cgroup is a memory cgroup of the machine's kernel, version 1 or 2, made for a test.
type cgroup struct {
	dir             string
	limitFile, peak string // the files of the limit and of the peak usage
}

// newCgroup makes a memory cgroup limited to limit bytes (none when 0), and removes it
// when the test ends. It skips the test where no memory cgroup can be made: not root,
// or a container that does not let its cgroups be written.
func newCgroup(t *testing.T, limit int64) *cgroup {
	t.Helper()
	var cg cgroup
	var root string
	switch {
	case fileExists("/sys/fs/cgroup/memory/memory.limit_in_bytes"): // version 1
		root, cg = "/sys/fs/cgroup/memory", cgroup{limitFile: "memory.limit_in_bytes", peak: "memory.max_usage_in_bytes"}
	case fileExists("/sys/fs/cgroup/cgroup.controllers"): // version 2
		root, cg = "/sys/fs/cgroup", cgroup{limitFile: "memory.max", peak: "memory.peak"}
	default:
		t.Skip("no memory cgroup hierarchy at /sys/fs/cgroup")
	}
	var err error
	if cg.dir, err = os.MkdirTemp(root, "restoregraph-test-"); err != nil {
		t.Skipf("cannot make a memory cgroup: %v", err)
	}
	t.Cleanup(func() { os.Remove(cg.dir) })
	if !fileExists(filepath.Join(cg.dir, cg.limitFile)) {
		t.Skipf("%s has no memory controller", cg.dir)
	}
	if limit > 0 {
		require.NoError(t, os.WriteFile(filepath.Join(cg.dir, cg.limitFile), []byte(strconv.FormatInt(limit, 10)), 0o644))
	}
	return &cg
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// run runs the command in the cgroup, with env added to the test's environment, and
// returns what it wrote and whether the kernel killed it.
func (cg *cgroup) run(t *testing.T, env []string, args ...string) (res result, killed bool) {
	t.Helper()
	// The shell joins the cgroup, then becomes the command: it starts inside it.
	cmd := exec.Command("/bin/sh", append([]string{"-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cg.dir, binary}, args...)...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none")), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		res.code = ee.ExitCode()
		killed = strings.Contains(ee.String(), "killed")
	} else {
		require.NoError(t, err)
	}
	res.stdout, res.stderr = out.String(), errb.String()
	return res, killed
}

// peakBytes is the most memory the cgroup's processes have used at once.
func (cg *cgroup) peakBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cg.dir, cg.peak))
	require.NoError(t, err)
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	require.NoError(t, err)
	return n
}

// TestRestoreFitsItsContainer restores into the embedded server inside a memory cgroup
// (what a pod's memory limit makes) smaller than what the same restore uses without
// one: restoregraph gives the Go collector a soft limit of 90% of the cgroup's, and
// finishes, where without it (AUTOMEMLIMIT=off) the kernel kills it.
func TestRestoreFitsItsContainer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a memory cgroup needs root")
	}
	path := filepath.Join(t.TempDir(), "apps.tar.gz")
	f, err := os.Create(path)
	require.NoError(t, err)
	n, err := workload.WriteApps(f, 60_000, 1)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	// The embedded server's objects in its heap, not in a data file: the file's page
	// cache is charged to the cgroup too, and the kernel takes it back from a container
	// that needs the room, so a free run's peak with it says little of what it needs.
	args := []string{"restore", "--backup", path, "--embedded", "--embedded-data-dir=", "-v"}

	// The smaller peak of two free runs: a run's peak moves with when its collections
	// fall (102 to 145 MiB over fifteen runs in one sitting), and a container made from a high one held
	// the run without the soft limit too.
	peak := min(freePeak(t, nil, args), freePeak(t, nil, args))
	// What the restore needs with the collector at work all the time: a soft limit of
	// 1 MiB, far under its live heap (80 MiB, a little over what a tight container needs,
	// whose page cache the kernel takes back). 70% of the free peak was too close to it
	// on a machine whose free runs made less garbage: a container of 71 MiB, where on
	// another the restore was killed in 72 and finished in 77. So the container is made
	// a third of the way from this need to the free peak: nearer the need, which is
	// measured high, than the free peak, which is the lower of two.
	need := freePeak(t, []string{"GOMEMLIMIT=1MiB"}, args)
	require.Greater(t, peak, need*11/10,
		"the free run's peak (%d MiB) is within a tenth of what the restore needs (%d MiB): no container between them can tell a soft limit from none", peak>>20, need>>20)

	limit := (need + (peak-need)/3) &^ 4095
	t.Logf("free peak %d MiB, with the collector always at work %d MiB: a container of %d MiB", peak>>20, need>>20, limit>>20)
	tight := newCgroup(t, limit)
	res, killed := tight.run(t, nil, args...)
	require.False(t, killed, "killed in a container of %d MiB (%d MiB unlimited, %d MiB with the collector always at work)", limit>>20, peak>>20, need>>20)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stderr, fmt.Sprintf("GOMEMLIMIT=%d ", int64(float64(limit)*memoryShare)))
	assert.Contains(t, res.stdout, fmt.Sprintf("%d objects in ", n))
	assert.Contains(t, res.stdout, fmt.Sprintf(": %d restored", n))

	// The container is tight enough to tell: without the soft limit, the same restore
	// in the same container is killed. A run's peak moves with when its collections
	// fall, most on a busy machine, so it is given three runs to be killed in.
	for range 3 {
		if _, killed = newCgroup(t, limit).run(t, []string{"AUTOMEMLIMIT=off"}, args...); killed {
			break
		}
	}
	assert.True(t, killed, "with AUTOMEMLIMIT=off, not killed in a container of %d MiB in three runs (%d MiB unlimited, %d MiB with the collector always at work): the test tells nothing", limit>>20, peak>>20, need>>20)
}

// freePeak runs the command in a cgroup without a limit, with env added, and returns
// its peak; the run must finish.
func freePeak(t *testing.T, env, args []string) int64 {
	t.Helper()
	cg := newCgroup(t, 0)
	res, killed := cg.run(t, env, args...)
	require.False(t, killed)
	require.Equal(t, 0, res.code, res.stderr)
	return cg.peakBytes(t)
}

// TestMemoryLimitLeftToTheUser: GOMEMLIMIT, when set, is the limit; an AUTOMEMLIMIT that
// is not a share is bad input.
func TestMemoryLimitLeftToTheUser(t *testing.T) {
	cmd := exec.Command(binary, "plan", "--backup", "/nonexistent.tar.gz", "-v")
	cmd.Env = append(os.Environ(), "GOMEMLIMIT=300MiB")
	out, _ := cmd.CombinedOutput()
	assert.Contains(t, string(out), "GOMEMLIMIT is already set")

	cmd = exec.Command(binary, "plan", "--backup", "/nonexistent.tar.gz")
	cmd.Env = append(os.Environ(), "AUTOMEMLIMIT=1.5")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, exitBadInput, ee.ExitCode())
	assert.Contains(t, string(out), "AUTOMEMLIMIT must be off or a share")
}
