package test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"testing"

	"github.com/restoregraph/restoregraph/test/harness"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// TestControllerCarriesOutVeleroRestores: Velero's server runs with its restore
// controllers off and restoregraph's controller in their place. velero restore create
// --from-backup of the backup Velero wrote completes through restoregraph: the objects
// are in the cluster, velero restore describe --details lists them, velero restore logs
// shows the restore's report. A Restore with a field restoregraph does not do fails
// validation, naming it.
func TestControllerCarriesOutVeleroRestores(t *testing.T) {
	ctx := context.Background()
	s, err := harness.StartS3(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	const name = "shop-and-fleet"
	uploadFixture(t, s, name)
	vc := veleroCluster(t)
	v, err := vc.StartVelero(ctx, s, harness.VeleroOptions{Features: []string{"EnableAPIGroupVersions"},
		DisableControllers: []string{"restore", "restore-operations", "restore-finalizer"}})
	require.NoError(t, err)
	veleroPhase(t, vc, veleroBackups, name, "Completed")

	bin, err := cliBinary()
	require.NoError(t, err)
	controller := exec.Command(bin, "controller", "--plugins", v.PluginDir(), "--kubeconfig", vc.Kubeconfig, "-v")
	var logs syncBuffer
	controller.Stdout, controller.Stderr = &logs, &logs
	controller.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, controller.Start())
	t.Cleanup(func() { controller.Process.Signal(syscall.SIGTERM); controller.Wait() })

	out, err := v.Run(ctx, "restore", "create", "shop-copy", "--from-backup", name, "--include-namespaces", "shop",
		"--namespace-mappings", "shop:shop-copy", "--wait")
	require.NoError(t, err, out)
	phase := veleroPhase(t, vc, veleroRestores, "shop-copy", "Completed", "PartiallyFailed", "Failed", "FailedValidation")
	require.Equal(t, "Completed", phase, "controller:\n%s", logs.String())

	dyn, err := dynamic.NewForConfig(vc.Config)
	require.NoError(t, err)
	web, err := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("shop-copy").
		Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "shop-copy", web.GetLabels()["velero.io/restore-name"])
	r, err := dyn.Resource(veleroRestores).Namespace("velero").Get(ctx, "shop-copy", metav1.GetOptions{})
	require.NoError(t, err)
	total, _, _ := unstructured.NestedInt64(r.Object, "status", "progress", "totalItems")
	restored, _, _ := unstructured.NestedInt64(r.Object, "status", "progress", "itemsRestored")
	assert.Positive(t, total)
	assert.Equal(t, total, restored, "status.progress")
	start, _, _ := unstructured.NestedString(r.Object, "status", "startTimestamp")
	assert.NotEmpty(t, start)

	describe, err := v.Run(ctx, "restore", "describe", "shop-copy", "--details")
	require.NoError(t, err, describe)
	t.Logf("velero restore describe --details:\n%s", describe)
	assert.Regexp(t, `Phase:\s+\S*Completed`, describe)
	assert.Regexp(t, fmt.Sprintf(`Items restored:\s+%d\n`, restored), describe, "as status.progress says")
	assert.Contains(t, describe, "shop-copy/web(created)")
	vlogs, err := v.Run(ctx, "restore", "logs", "shop-copy")
	require.NoError(t, err, vlogs)
	assert.Contains(t, vlogs, "objects in")

	// A field restoregraph does not do: FailedValidation, naming it.
	_, err = dyn.Resource(veleroRestores).Namespace("velero").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "velero.io/v1", "kind": "Restore", "metadata": map[string]any{"name": "with-volumes", "namespace": "velero"},
		"spec": map[string]any{"backupName": name, "restorePVs": true}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	phase = veleroPhase(t, vc, veleroRestores, "with-volumes", "Completed", "PartiallyFailed", "Failed", "FailedValidation")
	require.Equal(t, "FailedValidation", phase)
	r, err = dyn.Resource(veleroRestores).Namespace("velero").Get(ctx, "with-volumes", metav1.GetOptions{})
	require.NoError(t, err)
	errs, _, _ := unstructured.NestedStringSlice(r.Object, "status", "validationErrors")
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0], "spec.restorePVs")
}

// syncBuffer is a buffer a process writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
