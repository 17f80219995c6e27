package test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
	"github.com/restoregraph/restoregraph/test/harness"
)

// TestRestoreOutlastsServerRestarts restores 3,010 objects (ten namespaces of 300
// ConfigMaps) with the command, as a user would, into a real kube-apiserver; 5 s in, a
// process of the control plane is killed (SIGKILL) and started again after a while.
// The restore finishes by itself, exit 0, with every object restored once and whole.
// While kube-apiserver is away, the progress line says so.
func TestRestoreOutlastsServerRestarts(t *testing.T) {
	const namespaces, perNamespace = 10, 300
	tarball := filepath.Join(t.TempDir(), "wide.tar.gz")
	var buf bytes.Buffer
	require.NoError(t, workload.Wide("faults", namespaces, perNamespace, 11).Write(&buf))
	require.NoError(t, os.WriteFile(tarball, buf.Bytes(), 0o600))
	bin, err := cliBinary()
	require.NoError(t, err)

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
			cmd := exec.Command(bin, "restore", "--backup", tarball, "--kubeconfig", c.Kubeconfig, "-o", "json",
				"--client-qps", "200", "--client-burst", "200", "--workers", "8", "--item-timeout", "3m")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			started := time.Now()
			err := cmd.Run()
			took := time.Since(started)
			require.NoError(t, <-faulted, "the %s was restarted\n%s", tc.process, c.Log(tc.process))
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("exit %d after %s\n%s", ee.ExitCode(), took, tail(stderr.String(), 4000))
			}
			require.NoError(t, err)
			assert.Less(t, 5*time.Second, took, "the restore was running when the fault came")

			var rep restoreReport
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
			restored, retries := 0, 0
			for _, o := range rep.Objects {
				if o.Status == "Restored" {
					restored++
				}
				retries += o.Retries
			}
			assert.Equal(t, namespaces*(1+perNamespace), restored, "every object restored")
			t.Logf("%s away %s: exit 0 after %s, %d retries", tc.process, tc.away, took.Round(100*time.Millisecond), retries)
			if tc.process == "kube-apiserver" {
				assert.NotZero(t, retries, "requests were refused while it was away")
				assert.Contains(t, stderr.String(), "the API server has not answered for", "the progress line said the server was away")
			}

			// Object by object against the backup: each ConfigMap once, whole.
			dyn, err := dynamic.NewForConfig(c.Config)
			require.NoError(t, err)
			for i := range namespaces {
				ns := fmt.Sprintf("faults-%02d", i)
				list, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns).
					List(ctx, metav1.ListOptions{LabelSelector: "velero.io/backup-name"})
				require.NoError(t, err)
				seen := map[string]bool{}
				for _, cm := range list.Items {
					assert.False(t, seen[cm.GetName()], "%s/%s twice", ns, cm.GetName())
					seen[cm.GetName()] = true
					data, _, _ := unstructured.NestedString(cm.Object, "data", "payload")
					assert.Len(t, data, 1024, "%s/%s whole", ns, cm.GetName())
				}
				for j := range perNamespace {
					assert.True(t, seen[fmt.Sprintf("cm-%05d", j)], "%s/cm-%05d restored", ns, j)
				}
				assert.Len(t, seen, perNamespace, "nothing in %s but the backup's", ns)
			}
		})
	}
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }
