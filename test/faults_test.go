package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
)

// wideBackup writes a backup of namespaces of perNamespace ConfigMaps of 1 KiB each
// (named prefix-NN, cm-NNNNN), and returns its path.
func wideBackup(t *testing.T, prefix string, namespaces, perNamespace int) string {
	t.Helper()
	tarball := filepath.Join(t.TempDir(), prefix+".tar.gz")
	var buf bytes.Buffer
	require.NoError(t, workload.Wide(prefix, namespaces, perNamespace, 11).Write(&buf))
	require.NoError(t, os.WriteFile(tarball, buf.Bytes(), 0o600))
	return tarball
}

// cliRun is how one run of the command ended.
type cliRun struct {
	exit           int
	stdout, stderr string
	took           time.Duration
}

// report decodes the JSON report the run wrote (-o json).
func (r cliRun) report(t *testing.T) restoreReport {
	t.Helper()
	var rep restoreReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), "exit %d\n%s", r.exit, tail(r.stderr, 4000))
	return rep
}

// requireCLI builds the command now, so that a test's fault, timed from before the
// command starts, does not come while it is being built.
func requireCLI(t *testing.T) {
	t.Helper()
	_, err := cliBinary()
	require.NoError(t, err)
}

// runCLI runs the command to its end.
func runCLI(t *testing.T, args ...string) cliRun {
	t.Helper()
	r, _ := runCLIKilledAfter(t, 0, args...)
	return r
}

// byRef indexes a report's objects by namespace/name.
func (r restoreReport) byRef() map[string]restore.ObjectResult {
	out := map[string]restore.ObjectResult{}
	for _, o := range r.Objects {
		out[o.Namespace+"/"+o.Name] = o
	}
	return out
}

// configMapsIn returns the ConfigMaps of the backup's label in ns, by name, each
// asserted once and whole.
func configMapsIn(t *testing.T, c *harness.Cluster, ns string) map[string]bool {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.Config)
	require.NoError(t, err)
	list, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns).
		List(context.Background(), metav1.ListOptions{LabelSelector: "velero.io/backup-name"})
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, cm := range list.Items {
		assert.False(t, seen[cm.GetName()], "%s/%s twice", ns, cm.GetName())
		seen[cm.GetName()] = true
		data, _, _ := unstructured.NestedString(cm.Object, "data", "payload")
		assert.Len(t, data, 1024, "%s/%s whole", ns, cm.GetName())
	}
	return seen
}

// assertWhole asserts, object by object against the backup, that each namespace holds
// its perNamespace ConfigMaps once and whole, and nothing else of the backup's.
func assertWhole(t *testing.T, c *harness.Cluster, prefix string, namespaces, perNamespace int) {
	t.Helper()
	for i := range namespaces {
		ns := fmt.Sprintf("%s-%02d", prefix, i)
		seen := configMapsIn(t, c, ns)
		for j := range perNamespace {
			assert.True(t, seen[fmt.Sprintf("cm-%05d", j)], "%s/cm-%05d restored", ns, j)
		}
		assert.Len(t, seen, perNamespace, "nothing in %s but the backup's", ns)
	}
}

// TestRestoreOutlastsServerRestarts restores 3,010 objects (ten namespaces of 300
// ConfigMaps) with the command, as a user would, into a real kube-apiserver; 5 s in, a
// process of the control plane is killed (SIGKILL) and started again after a while.
// The restore finishes by itself, exit 0, with every object restored once and whole.
// While kube-apiserver is away, the progress line says so.
func TestRestoreOutlastsServerRestarts(t *testing.T) {
	const namespaces, perNamespace = 10, 300
	tarball := wideBackup(t, "faults", namespaces, perNamespace)
	requireCLI(t)

	for _, tc := range []struct {
		process string
		away    time.Duration
	}{
		{"kube-apiserver", 5 * time.Second},
		{"kube-apiserver", 60 * time.Second},
		{"etcd", 5 * time.Second},
	} {
		t.Run(fmt.Sprintf("%s away %s", tc.process, tc.away), func(t *testing.T) {
			c := startCluster(t, harness.Options{})
			ctx := context.Background()
			faulted := make(chan error, 1)
			go func() {
				time.Sleep(5 * time.Second)
				if err := c.Kill(tc.process); err != nil {
					faulted <- err
					return
				}
				time.Sleep(tc.away)
				if err := c.Restart(tc.process); err != nil {
					faulted <- err
					return
				}
				faulted <- c.WaitReady(ctx, 2*time.Minute)
			}()
			// Requests limited, so that the restore (about 15 s) is still running when the
			// fault comes; the default admission, through the cluster's Leases.
			run := runCLI(t, "restore", "--backup", tarball, "--kubeconfig", c.Kubeconfig, "-o", "json",
				"--client-qps", "200", "--client-burst", "200", "--workers", "8", "--item-timeout", "3m")
			require.NoError(t, <-faulted, "the %s was restarted\n%s", tc.process, c.Log(tc.process))
			require.Zero(t, run.exit, "after %s\n%s", run.took, tail(run.stderr, 4000))
			assert.Less(t, 5*time.Second, run.took, "the restore was running when the fault came")

			restored, retries := 0, 0
			for _, o := range run.report(t).Objects {
				if o.Status == "Restored" {
					restored++
				}
				retries += o.Retries
			}
			assert.Equal(t, namespaces*(1+perNamespace), restored, "every object restored")
			t.Logf("%s away %s: exit 0 after %s, %d retries", tc.process, tc.away, run.took.Round(100*time.Millisecond), retries)
			if tc.process == "kube-apiserver" {
				assert.NotZero(t, retries, "requests were refused while it was away")
				assert.Contains(t, run.stderr, "the API server has not answered for", "the progress line said the server was away")
			}
			assertWhole(t, c, "faults", namespaces, perNamespace)
		})
	}
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

// TestAnOutageLongerThanTheItemTimeout: kube-apiserver is away (SIGKILL, started again
// 40 s later) for longer than --item-timeout (10 s) in the middle of a restore of 3,010
// objects. The run ends by itself, exit 1, each object it could not restore failed with
// its reason, none left hanging; the same command run again, with the same journal,
// finishes the restore: exit 0, every object once and whole.
func TestAnOutageLongerThanTheItemTimeout(t *testing.T) {
	const namespaces, perNamespace = 10, 300
	tarball := wideBackup(t, "outage", namespaces, perNamespace)
	requireCLI(t)
	c := startCluster(t, harness.Options{})
	ctx := context.Background()
	faulted := make(chan error, 1)
	go func() {
		time.Sleep(5 * time.Second)
		if err := c.Kill("kube-apiserver"); err != nil {
			faulted <- err
			return
		}
		time.Sleep(40 * time.Second)
		if err := c.Restart("kube-apiserver"); err != nil {
			faulted <- err
			return
		}
		faulted <- c.WaitReady(ctx, 2*time.Minute)
	}()
	journal := filepath.Join(t.TempDir(), "journal")
	args := []string{"restore", "--backup", tarball, "--kubeconfig", c.Kubeconfig, "-o", "json", "--journal", journal,
		"--client-qps", "200", "--client-burst", "200", "--workers", "8", "--item-timeout", "10s"}
	first := runCLI(t, args...)
	require.NoError(t, <-faulted, "kube-apiserver was restarted\n%s", c.Log("kube-apiserver"))
	require.Equal(t, 1, first.exit, "after %s\n%s", first.took, tail(first.stderr, 4000))
	statuses := map[restore.Status]int{}
	var failed restore.ObjectResult
	for _, o := range first.report(t).Objects {
		statuses[o.Status]++
		if o.Status == restore.Failed && failed.Name == "" {
			failed = o
		}
		if o.Status == restore.Failed || o.Status == restore.Skipped {
			assert.NotEmpty(t, o.Reason, "%s/%s says why", o.Namespace, o.Name)
		}
	}
	t.Logf("first run: exit 1 after %s: %v; a failure: %s/%s: %s", first.took.Round(100*time.Millisecond), statuses,
		failed.Namespace, failed.Name, failed.Reason)
	assert.Positive(t, statuses[restore.Restored], "restored before the outage")
	require.NotEmpty(t, failed.Name, "objects failed during the outage")
	assert.Contains(t, failed.Reason, "item timeout (10s)", "named as the item timeout")
	assert.Equal(t, namespaces*(1+perNamespace), len(first.report(t).Objects), "every object accounted for")

	again := runCLI(t, args...)
	require.Zero(t, again.exit, "the run again, after %s\n%s", again.took, tail(again.stderr, 4000))
	fromJournal := 0
	for _, o := range again.report(t).Objects {
		assert.Contains(t, []restore.Status{restore.Restored}, o.Status, "%s/%s", o.Namespace, o.Name)
		if o.FromJournal {
			fromJournal++
		}
	}
	t.Logf("run again: exit 0 after %s, %d objects from the journal", again.took.Round(100*time.Millisecond), fromJournal)
	assert.Equal(t, statuses[restore.Restored], fromJournal, "what the first run restored is taken from its journal")
	assertWhole(t, c, "outage", namespaces, perNamespace)
}
