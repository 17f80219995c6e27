package test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
)

// TestConcurrentOperationsOneKilled runs two restores of the same backup and a backup
// of another namespace at once, each a process of its own admitted through the
// cluster's Leases, and SIGKILLs the first restore mid-way:
//   - the backup, which reads nothing the restores write, runs beside them and ends;
//   - the second restore waits for the first, whose Lease then goes unrenewed; once it
//     has expired, the second restore is admitted and finishes the work, taking what
//     the first made as its own: every object once, no Lease left behind.
func TestConcurrentOperationsOneKilled(t *testing.T) {
	const namespaces, perNamespace = 3, 300
	tarball := wideBackup(t, "shared", namespaces, perNamespace)
	c := startCluster(t, harness.Options{})
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for i := range 50 {
		_, err := cs.CoreV1().ConfigMaps("kept").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("kept-%02d", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	leases := func() []string {
		l, err := cs.CoordinationV1().Leases("restoregraph-admission").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil
		}
		var names []string
		for _, x := range l.Items {
			names = append(names, x.Name)
		}
		return names
	}

	restoreArgs := []string{"restore", "--backup", tarball, "--kubeconfig", c.Kubeconfig, "-o", "json",
		"--client-qps", "50", "--client-burst", "50", "--workers", "4"}
	first := startCLI(t, restoreArgs...)
	require.Eventually(t, func() bool { return len(leases()) == 1 }, 30*time.Second, 100*time.Millisecond, "the first restore is admitted")
	admittedFirst := leases()

	second := startCLI(t, restoreArgs...)
	backupFile := filepath.Join(t.TempDir(), "kept.tar.gz")
	backup := startCLI(t, "backup", "-o", backupFile, "--include-namespaces", "kept", "--kubeconfig", c.Kubeconfig)
	time.Sleep(3 * time.Second)
	require.NoError(t, first.cmd.Process.Kill())
	first.cmd.Wait()
	killedAt := time.Now()
	partial := len(configMapsIn(t, c, "shared-00")) + len(configMapsIn(t, c, "shared-01")) + len(configMapsIn(t, c, "shared-02"))
	assert.Less(t, partial, namespaces*perNamespace, "the first restore was killed mid-way")

	require.NoError(t, backup.wait(), "the backup, beside the restores\n%s", backup.stderr.String())
	assert.True(t, time.Now().Before(killedAt.Add(25*time.Second)), "the backup did not wait for the killed restore's Lease to expire")
	b, err := archive.ReadFile(context.Background(), backupFile, archive.Options{})
	require.NoError(t, err)
	kept := 0
	for it := range b.Manifest().All() {
		if it.Resource == "configmaps" && strings.HasPrefix(it.Name, "kept-") {
			kept++
		}
	}
	b.Close()
	assert.Equal(t, 50, kept, "the backup holds the namespace it read")

	err = second.wait()
	secondEnded := time.Now()
	require.NoError(t, err, "the second restore\n%s", tail(second.stderr.String(), 4000))
	assert.Contains(t, second.stderr.String(), "restoregraph: waiting for", "the second restore waited for the first")
	assert.Greater(t, secondEnded.Sub(killedAt), 15*time.Second, "admitted only once the killed restore's Lease had expired (30 s)")
	rep := cliRun{stdout: second.stdout.String()}.report(t)
	byStatus := map[restore.Status]int{}
	for _, o := range rep.Objects {
		byStatus[o.Status]++
	}
	// What the killed restore made counts as restored by an earlier attempt of the same
	// backup's restore; assertWhole shows that none was made twice.
	assert.Equal(t, namespaces*(1+perNamespace), byStatus[restore.Restored]+byStatus[restore.Adopted], "every object restored: %v", byStatus)
	assertWhole(t, c, "shared", namespaces, perNamespace)
	assert.Empty(t, leases(), "no Lease left behind (the killed one was %v)", admittedFirst)
	t.Logf("killed with %d of %d ConfigMaps made; the second restore ended %s later: %v", partial, namespaces*perNamespace,
		secondEnded.Sub(killedAt).Round(100*time.Millisecond), byStatus)
}

// cliProcess is a run of the command under way.
type cliProcess struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
}

func startCLI(t *testing.T, args ...string) *cliProcess {
	t.Helper()
	bin, err := cliBinary()
	require.NoError(t, err)
	p := &cliProcess{cmd: exec.Command(bin, args...)}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() { p.cmd.Process.Kill() })
	return p
}

func (p *cliProcess) wait() error { return p.cmd.Wait() }
