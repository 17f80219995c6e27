package test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/restoregraph/restoregraph/test/harness"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// fixtureModifiers are resource modifiers of every patch kind and every condition kind,
// for the backup the real Velero server wrote of the shop and a fleet.
const fixtureModifiers = `
version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps, namespaces: [shop], resourceNameRegex: "^web$"}
  patches:
  - {operation: add, path: /metadata/annotations/moved, value: "yes"}
  - {operation: replace, path: /spec/revisionHistoryLimit, value: "3"}
- conditions: {groupResource: configmaps, resourceNameRegex: "^settings$"}
  mergePatches:
  - patchData: |
      data: {mode: staging}
- conditions: {groupResource: statefulsets.apps, matches: [{path: /spec/template/spec/containers/0/image, value: "postgres:17"}]}
  strategicPatches:
  - patchData: '{"spec": {"template": {"spec": {"containers": [{"name": "db", "image": "mirror.example.org/postgres:17"}]}}}}'
- conditions: {groupResource: "*.cluster.x-k8s.io", namespaces: ["fleet-*"]}
  mergePatches:
  - patchData: '{"metadata": {"annotations": {"restored-into": "dr"}}}'
- conditions: {groupResource: persistentvolumeclaims, labelSelector: {matchLabels: {app: db}}}
  patches:
  - {operation: add, path: /spec/storageClassName, value: fast}
`

// modified is a field the modifiers set: where, and what to.
type modified struct {
	gvr             schema.GroupVersionResource
	namespace, name string
	path            []string
	want            any
}

var fixtureModified = []modified{
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "shop", "web", []string{"metadata", "annotations", "moved"}, "yes"},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "shop", "web", []string{"spec", "revisionHistoryLimit"}, int64(3)},
	{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "shop", "settings", []string{"data", "mode"}, "staging"},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, "shop", "db", []string{"spec", "template", "spec", "containers", "0", "image"}, "mirror.example.org/postgres:17"},
	{schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "clusters"}, "fleet-00", "workload-00", []string{"metadata", "annotations", "restored-into"}, "dr"},
	{schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, "shop", "data-db-0", []string{"spec", "storageClassName"}, "fast"},
}

// fieldAt reads path in obj; a path part that is a number indexes a list.
func fieldAt(obj map[string]any, path []string) any {
	var v any = obj
	for _, p := range path {
		switch c := v.(type) {
		case map[string]any:
			v = c[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

// uploadFixture puts the backup the real Velero server wrote (testdata/velero/name)
// into the bucket, where Velero keeps it.
func uploadFixture(t *testing.T, s *harness.S3, name string) string {
	t.Helper()
	dir := filepath.Join("..", "testdata", "velero", name)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		_, err = s.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(s.Bucket),
			Key: aws.String("backups/" + name + "/" + e.Name()), Body: bytes.NewReader(data)})
		require.NoError(t, err)
	}
	return filepath.Join(dir, name+".tar.gz")
}

// fixtureBackup is the backup the real Velero server wrote of the shop and a fleet
// (testdata/velero).
const fixtureBackup = "shop-and-fleet"

// veleroWithFixture starts an S3 server holding fixtureBackup where Velero keeps it, a
// cluster, and Velero's server on it with opts, and returns once Velero has synced the
// backup in: the bucket, the cluster, the server and the tarball's path.
func veleroWithFixture(t *testing.T, opts harness.VeleroOptions) (*harness.S3, *harness.Cluster, *harness.Velero, string) {
	t.Helper()
	ctx := context.Background()
	s, err := harness.StartS3(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	tarball := uploadFixture(t, s, fixtureBackup)
	vc := veleroCluster(t)
	v, err := vc.StartVelero(ctx, s, opts)
	require.NoError(t, err)
	veleroPhase(t, vc, veleroBackups, fixtureBackup, "Completed")
	return s, vc, v, tarball
}

// modifiersConfigMap writes the modifiers into velero/name of the cluster, as a Velero
// user keeps them.
func modifiersConfigMap(t *testing.T, c *harness.Cluster, name, rules string) {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "velero"}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	_, err = cs.CoreV1().ConfigMaps("velero").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
		Data: map[string]string{"modifiers.yaml": rules}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// TestVeleroResourceModifiersSideBySide restores the backup the real Velero server
// wrote with the same resource modifiers, kept in a ConfigMap as Velero users keep
// them, by Velero (velero restore create --resource-modifier-configmap) and by
// restoregraph (restore --resource-modifier-configmap), each into a fresh cluster, and
// compares every field the modifiers set: the same in both, and what the rules say.
func TestVeleroResourceModifiersSideBySide(t *testing.T) {
	t.Parallel() // its own control planes and S3 server: beside the other tests that have theirs
	ctx := context.Background()
	const name = fixtureBackup
	_, vc, v, tarball := veleroWithFixture(t, harness.VeleroOptions{Features: []string{"EnableAPIGroupVersions"}, ReadOnly: true})
	modifiersConfigMap(t, vc, "dr-modifiers", fixtureModifiers)
	out, err := v.Run(ctx, "restore", "create", "dr", "--from-backup", name, "--resource-modifier-configmap", "dr-modifiers", "--wait")
	require.NoError(t, err, out)
	phase := veleroPhase(t, vc, veleroRestores, "dr", "Completed", "PartiallyFailed", "Failed", "FailedValidation")
	if phase != "Completed" {
		logs, _ := v.Run(ctx, "restore", "logs", "dr")
		t.Logf("velero restore logs:\n%s", logs)
	}
	require.Equal(t, "Completed", phase, "Velero applies the modifiers")
	vc.StopVelero()

	rc := veleroCluster(t)
	modifiersConfigMap(t, rc, "dr-modifiers", fixtureModifiers)
	code, text := cli(t, "restore", "--backup", tarball, "--kubeconfig", rc.Kubeconfig, "--resource-modifier-configmap", "dr-modifiers")
	require.Equal(t, 0, code, text)
	code, text = cli(t, "verify", "--backup", tarball, "--kubeconfig", rc.Kubeconfig, "--resource-modifier-configmap", "dr-modifiers")
	assert.Equal(t, 0, code, "verify expects what the modifiers made\n%s", text)
	code, text = cli(t, "verify", "--backup", tarball, "--kubeconfig", rc.Kubeconfig)
	assert.Equal(t, 1, code, "and without them, it says what differs\n%s", text)
	assert.Contains(t, text, "spec.revisionHistoryLimit")

	vd, err := dynamic.NewForConfig(vc.Config)
	require.NoError(t, err)
	rd, err := dynamic.NewForConfig(rc.Config)
	require.NoError(t, err)
	get := func(d dynamic.Interface, m modified) any {
		o, err := d.Resource(m.gvr).Namespace(m.namespace).Get(ctx, m.name, metav1.GetOptions{})
		require.NoError(t, err, "%s %s/%s", m.gvr.Resource, m.namespace, m.name)
		return fieldAt(o.Object, m.path)
	}
	for _, m := range fixtureModified {
		velero, rg := get(vd, m), get(rd, m)
		t.Logf("%s %s/%s %v: Velero %v, restoregraph %v", m.gvr.Resource, m.namespace, m.name, m.path, velero, rg)
		assert.Equal(t, m.want, velero, "Velero: %s %s/%s %v", m.gvr.Resource, m.namespace, m.name, m.path)
		assert.Equal(t, velero, rg, "restoregraph as Velero: %s %s/%s %v", m.gvr.Resource, m.namespace, m.name, m.path)
	}
	// What no rule matches is as the backup holds it, in both.
	for _, d := range []dynamic.Interface{vd, rd} {
		web, err := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "services"}).Namespace("shop").Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		_, has := web.GetAnnotations()["moved"]
		assert.False(t, has)
		_, found, _ := unstructured.NestedString(web.Object, "spec", "storageClassName")
		assert.False(t, found)
	}
}
