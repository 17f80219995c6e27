package test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
	"github.com/restoregraph/restoregraph/velero"
	"github.com/restoregraph/restoregraph/velero/controller"
	"github.com/restoregraph/restoregraph/velero/pluginhost"
)

// TestControllerAsALibrary runs the controller as an embedder does, in this process,
// built from a controller.Config: against a real kube-apiserver and the real Velero
// server (its restore controllers off), velero restore create of the backup Velero
// wrote completes through it, and velero restore logs prints a line per object of the
// restore, saying what became of it, with no Secret's data.
func TestControllerAsALibrary(t *testing.T) {
	t.Parallel() // its own control plane and S3 server: beside the other tests that have theirs
	ctx := context.Background()
	s3srv, vc, v, _ := veleroWithFixture(t, harness.VeleroOptions{Features: []string{"EnableAPIGroupVersions"},
		DisableControllers: harness.RestoreControllers})

	// The controller runs as the chart's ServiceAccount, with its RBAC alone.
	var logs syncBuffer
	c := runController(t, vc, v.PluginDir(), controller.Config{Identity: "in-process", LeaseDuration: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.Eventually(t, c.Ready, 30*time.Second, 50*time.Millisecond, "the Restores are listed")
	dyn, err := dynamic.NewForConfig(vc.Config)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(vc.Config)
	require.NoError(t, err)

	out, err := v.Run(ctx, "restore", "create", "shop-lib", "--from-backup", fixtureBackup, "--include-namespaces", "shop",
		"--namespace-mappings", "shop:shop-lib", "--wait")
	require.NoError(t, err, out)
	phase := veleroPhase(t, vc, veleroRestores, "shop-lib", "Completed", "PartiallyFailed", "Failed", "FailedValidation")
	require.Equal(t, "Completed", phase, "controller:\n%s", logs.String())
	r, err := dyn.Resource(veleroRestores).Namespace("velero").Get(ctx, "shop-lib", metav1.GetOptions{})
	require.NoError(t, err)
	restored, _, _ := unstructured.NestedInt64(r.Object, "status", "progress", "itemsRestored")
	require.Positive(t, restored)
	assert.Equal(t, "in-process", r.GetAnnotations()[controller.TakenByAnnotation])

	// velero restore logs reads the log the controller wrote beside the backups.
	vlogs, err := v.Run(ctx, "restore", "logs", "shop-lib")
	require.NoError(t, err, vlogs)
	t.Logf("velero restore logs (%d lines), its start:\n%s", strings.Count(vlogs, "\n"), head(vlogs, 12))
	lines := regexp.MustCompile(`(?m)^time=\S+ level=INFO msg=(restored|adopted|updated) restore=shop-lib resource=\S+ version=\S+ namespace=shop name=\S+ targetNamespace=shop-lib`).FindAllString(vlogs, -1)
	assert.Len(t, lines, int(restored)-1, "a line per object there after the restore, in the mapped namespace (the Namespace itself is the other)")
	assert.Regexp(t, `(?m)^time=\S+ level=INFO msg=restored restore=shop-lib resource=deployments.apps version=v1 namespace=shop name=web targetNamespace=shop-lib`, vlogs)
	assert.Regexp(t, `msg="restore ended" restore=shop-lib objects=\d+`, vlogs)

	// No Secret's data: the backup's Secrets are restored, and none of their values is
	// in the log, as it is stored or as the API server returns it.
	secrets, err := cs.CoreV1().Secrets("shop-lib").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	checked := 0
	for _, sec := range secrets.Items {
		if sec.Type == corev1.SecretTypeServiceAccountToken {
			continue
		}
		assert.Contains(t, vlogs, "name="+sec.Name, "the Secret's line names it")
		for k, val := range sec.Data {
			if len(val) >= 6 {
				assert.NotContains(t, vlogs, string(val), "Secret %s key %s", sec.Name, k)
				checked++
			}
		}
	}
	assert.Positive(t, checked, "the backup holds Secrets with data")

	// The same log is what the location holds.
	obj, err := s3srv.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s3srv.Bucket), Key: aws.String("restores/shop-lib/restore-shop-lib-logs.gz")})
	require.NoError(t, err)
	zr, err := gzip.NewReader(obj.Body)
	require.NoError(t, err)
	stored, err := io.ReadAll(zr)
	obj.Body.Close()
	require.NoError(t, err)
	assert.True(t, bytes.Contains([]byte(vlogs), bytes.TrimSpace(stored)), "velero restore logs prints the stored log")
}

// head is the first n lines of s.
func head(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// runController runs restoregraph's controller in this process until the test ends, as
// the chart's ServiceAccount with its RBAC alone, Velero's client of namespace velero,
// and the plugins in pluginDir with env added to their environment; config gives the
// rest (identity, logger, lease). Once stopped, it is not ready and has no election
// left.
func runController(t testing.TB, c *harness.Cluster, pluginDir string, config controller.Config, env ...string) *controller.Controller {
	t.Helper()
	asSA := asChart(t, c)
	dyn, err := dynamic.NewForConfig(asSA)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(asSA)
	require.NoError(t, err)
	config.Target, err = restore.NewTarget(asSA)
	require.NoError(t, err)
	config.Velero = velero.Client{Dynamic: dyn, Secrets: cs.CoreV1(), Namespace: "velero"}
	config.Kubernetes = cs
	config.Plugins, config.PluginCommands = pluginHost(t, pluginDir, env...)
	ctl, err := controller.New(config)
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- ctl.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-ran)
		assert.False(t, ctl.Ready(), "not ready once stopped")
		assert.Zero(t, ctl.Electing(), "every election ended")
	})
	return ctl
}

// pluginHost is a plugin host for a controller in this process, with env added to the
// plugins' environment, and the commands of the plugin executables in dir; closed when
// the test ends.
func pluginHost(t testing.TB, dir string, env ...string) (*pluginhost.Host, [][]string) {
	t.Helper()
	found, err := pluginhost.Executables(dir)
	require.NoError(t, err)
	host := &pluginhost.Host{Env: append([]string{"AWS_EC2_METADATA_DISABLED=true"}, env...)}
	t.Cleanup(host.Close)
	var commands [][]string
	for _, f := range found {
		commands = append(commands, pluginhost.Command(f))
	}
	return host, commands
}
