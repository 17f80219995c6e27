package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

// The names the CSI stack gives its driver and classes.
const (
	CSIDriverName     = "csi.restoregraph.dev"
	CSIStorageClass   = "csi-fast"
	CSISnapshotClass  = "csi-snapshots"
	csiSnapshotterLbl = "velero.io/csi-volumesnapshot-class"
)

// CSI is a cluster's CSI stack: the test driver, whose volumes and snapshots are the
// directories Root/volumes/ID and Root/snapshots/ID, the external provisioner, the
// csi-snapshotter and the snapshot controller, each a process with the cluster's
// kubeconfig, and the objects that name the driver: a CSIDriver, a StorageClass that
// binds Immediately (CSIStorageClass) and a VolumeSnapshotClass Velero takes
// (CSISnapshotClass).
type CSI struct {
	Root string
}

// Volume is the directory of the driver's volume id (a PersistentVolume's
// spec.csi.volumeHandle).
func (s *CSI) Volume(id string) string { return filepath.Join(s.Root, "volumes", id) }

// StartCSI starts the CSI stack in c: the sidecars from $RESTOREGRAPH_CSI_BIN (make
// integration-bins builds them from their modules), the driver built from test/csi/driver,
// and the VolumeSnapshot CRDs from the snapshotter's client module, copied beside them.
// root is the storage the driver keeps its volumes and snapshots in: clusters given the
// same root share it, as clusters share a storage system, so that one restores the
// snapshots another made.
func (c *Cluster) StartCSI(ctx context.Context, root string) (*CSI, error) {
	dir := os.Getenv("RESTOREGRAPH_CSI_BIN")
	if dir == "" {
		return nil, fmt.Errorf("$RESTOREGRAPH_CSI_BIN is not set: run make integration-bins, which builds the CSI sidecars")
	}
	driver, err := csiDriver()
	if err != nil {
		return nil, err
	}
	// A Unix socket's path is short: not under the test's directory.
	sock, err := os.MkdirTemp("", "csi")
	if err != nil {
		return nil, err
	}
	endpoint := filepath.Join(sock, "csi.sock")
	if err := c.applyYAMLs(ctx, filepath.Join(dir, "crds")); err != nil {
		return nil, err
	}
	if err := c.start("csi-driver", driver, "--endpoint", endpoint, "--root", root, "--name", CSIDriverName); err != nil {
		os.RemoveAll(sock)
		return nil, err
	}
	c.onStop("csi-driver", func() { os.RemoveAll(sock) })
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat(endpoint)
		return err == nil, nil
	}); err != nil {
		return nil, fmt.Errorf("the CSI driver does not serve %s:\n%s", endpoint, c.logTail("csi-driver", 2000))
	}
	common := []string{"--csi-address", endpoint, "--kubeconfig", c.Kubeconfig, "--leader-election=false", "--v", "3"}
	if err := c.start("csi-provisioner", filepath.Join(dir, "csi-provisioner"), append(common, "--timeout", "30s", "--extra-create-metadata")...); err != nil {
		return nil, err
	}
	if err := c.start("csi-snapshotter", filepath.Join(dir, "csi-snapshotter"), append(common, "--timeout", "30s")...); err != nil {
		return nil, err
	}
	if err := c.start("snapshot-controller", filepath.Join(dir, "snapshot-controller"),
		"--kubeconfig", c.Kubeconfig, "--leader-election=false", "--v", "3"); err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	for gvr, o := range map[schema.GroupVersionResource]map[string]any{
		{Group: "storage.k8s.io", Version: "v1", Resource: "csidrivers"}: {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
			"metadata": map[string]any{"name": CSIDriverName}, "spec": map[string]any{"attachRequired": false, "podInfoOnMount": false}},
		{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}: {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
			"metadata": map[string]any{"name": CSIStorageClass}, "provisioner": CSIDriverName, "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"},
		{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotclasses"}: {"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
			"metadata": map[string]any{"name": CSISnapshotClass, "labels": map[string]any{csiSnapshotterLbl: "true"}},
			"driver":   CSIDriverName, "deletionPolicy": "Retain"},
	} {
		if _, err := dyn.Resource(gvr).Create(ctx, &unstructured.Unstructured{Object: o}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("%s: %w", gvr.Resource, err)
		}
	}
	return &CSI{Root: root}, nil
}

// applyYAMLs creates every object of the YAML files of dir, CRDs waited for until they
// are Established.
func (c *Cluster) applyYAMLs(ctx context.Context, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no YAML files in %s: run make integration-bins", dir)
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var o map[string]any
			if err := dec.Decode(&o); err == io.EOF {
				break
			} else if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			if len(o) == 0 {
				continue
			}
			u := &unstructured.Unstructured{Object: o}
			if u.GetKind() != "CustomResourceDefinition" {
				return fmt.Errorf("%s: %s: only CRDs are applied here", f, u.GetKind())
			}
			if _, err := dyn.Resource(crds).Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("%s: %w", f, err)
			}
			if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				got, err := dyn.Resource(crds).Get(ctx, u.GetName(), metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
				for _, c := range conds {
					if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
						return true, nil
					}
				}
				return false, nil
			}); err != nil {
				return fmt.Errorf("CRD %s not Established: %w", u.GetName(), err)
			}
		}
	}
	return nil
}

// csiDriver builds the test driver once a process, from test/csi/driver.
var csiDriver = sync.OnceValues(func() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "csi", "driver")
	dir, err := os.MkdirTemp("", "csi-driver")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "csi-driver")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the CSI driver: %w\n%s", err, out)
	}
	return bin, nil
})
