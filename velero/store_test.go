package velero

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/velero/internal/testbin"
	"github.com/restoregraph/restoregraph/velero/pluginhost"
)

// The backup the real Velero server wrote (testdata/velero), and what it holds.
const (
	fixture        = "../testdata/velero/shop-and-fleet/shop-and-fleet.tar.gz"
	fixtureObjects = 102
	credentials    = "aws_access_key_id=restoregraph\naws_secret_access_key=not-to-be-shown\n"
)

func veleroObject(kind, name string, labels map[string]string, spec, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "velero.io/v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "velero"}, "spec": spec, "status": status}}
	if labels != nil {
		u.SetLabels(labels)
	}
	return u
}

func completed(name string, started time.Time, labels map[string]string) *unstructured.Unstructured {
	return veleroObject("Backup", name, labels, map[string]any{"storageLocation": "default"},
		map[string]any{"phase": "Completed", "startTimestamp": started.UTC().Format(time.RFC3339)})
}

// store is a directory holding the fixture as a bucket holds it under prefix rg, the
// location of the test plugin's object store over it, and the Secret of its credentials.
func store(t *testing.T, config map[string]any) (root string, objs []runtime.Object, secret *corev1.Secret) {
	t.Helper()
	root = t.TempDir()
	key := filepath.Join(root, "velero", filepath.FromSlash(archive.TarballKey("rg", "shop-and-fleet")))
	require.NoError(t, os.MkdirAll(filepath.Dir(key), 0o755))
	data, err := os.ReadFile(fixture)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(key, data, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, ".credentials"), []byte(credentials), 0o600))
	cfg := map[string]any{"root": root}
	for k, v := range config {
		cfg[k] = v
	}
	loc := veleroObject("BackupStorageLocation", "default", nil,
		map[string]any{"provider": "example.io/dir", "objectStorage": map[string]any{"bucket": "velero", "prefix": "rg/"},
			"config": cfg, "credential": map[string]any{"name": "cloud-credentials", "key": "cloud"}},
		map[string]any{"phase": "Available"})
	secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloud-credentials", Namespace: "velero"},
		Data: map[string][]byte{"cloud": []byte(credentials)}}
	return root, []runtime.Object{loc, completed("shop-and-fleet", time.Now(), nil)}, secret
}

func client(secret *corev1.Secret, objs ...runtime.Object) Client {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{backupsResource: "BackupList", locationsResource: "BackupStorageLocationList", RestoresResource: "RestoreList",
			snapshotLocationsResource: "VolumeSnapshotLocationList"}, objs...)
	var kube *kubefake.Clientset
	if secret != nil {
		kube = kubefake.NewClientset(secret)
	} else {
		kube = kubefake.NewClientset()
	}
	return Client{Dynamic: dyn, Secrets: kube.CoreV1()}
}

// A backup named as Velero names it is found through its Backup and location, and read
// through the location's object-store plugin, run out of process with Velero's
// framework: the credential reaches the plugin as a file, a stream that breaks half way
// is resumed, and the file is gone once the store is closed.
func TestReadABackupThroughItsLocation(t *testing.T) {
	ctx := context.Background()
	size := fileLen(t, fixture)
	_, objs, secret := store(t, map[string]any{"breakAt": strconv.FormatInt(size/2, 10)})
	v := client(secret, objs...)
	b, err := v.Backup(ctx, "shop-and-fleet")
	require.NoError(t, err)
	assert.Equal(t, "rg/backups/shop-and-fleet/shop-and-fleet.tar.gz", b.Key())

	h := &pluginhost.Host{}
	defer h.Close()
	st, err := v.OpenLocation(ctx, h, b.Location, []string{testbin.Plugins(t)})
	require.NoError(t, err)
	creds := st.credentials
	info, err := os.Stat(creds)
	require.NoError(t, err, "the credential is written for the plugin")
	assert.Equal(t, fs.FileMode(0o600), info.Mode().Perm(), "and only this user reads it")

	backup, err := archive.Open(ctx, st, b.Key(), archive.Options{Resume: fastResume})
	require.NoError(t, err)
	defer backup.Close()
	assert.Equal(t, fixtureObjects, backup.Manifest().Len())
	stats := backup.SourceStats()
	assert.Equal(t, 1, stats.Resumed, "the broken stream is resumed")
	assert.Equal(t, size, stats.Bytes)

	require.NoError(t, st.Close())
	_, err = os.Stat(creds)
	assert.ErrorIs(t, err, fs.ErrNotExist, "the credentials file is removed with the store")
}

// Each reason a backup cannot be read through Velero is an error of its own kind that
// names the object, and never shows a Secret's value.
func TestFindingABackupFails(t *testing.T) {
	ctx := context.Background()
	h := &pluginhost.Host{}
	defer h.Close()
	bin := testbin.Plugins(t)

	open := func(v Client, name string) error {
		b, err := v.Backup(ctx, name)
		if err != nil {
			return err
		}
		st, err := v.OpenLocation(ctx, h, b.Location, []string{bin})
		if err != nil {
			return err
		}
		defer st.Close()
		backup, err := archive.Open(ctx, st, b.Key(), archive.Options{Resume: fastResume})
		if err == nil {
			backup.Close()
		}
		return err
	}
	_, objs, secret := store(t, nil)
	loc := objs[0].(*unstructured.Unstructured)
	with := func(mutate func(loc, backup *unstructured.Unstructured)) Client {
		l, b := loc.DeepCopy(), objs[1].(*unstructured.Unstructured).DeepCopy()
		mutate(l, b)
		return client(secret, l, b)
	}
	require.NoError(t, open(client(secret, objs...), "shop-and-fleet"), "the store as it is reads")

	for _, c := range []struct {
		name   string
		v      Client
		backup string // default shop-and-fleet
		is     error
		names  string
	}{
		{"no such backup", client(secret, objs...), "nope", ErrBackupNotFound, "velero/nope"},
		{"in progress", with(func(_, b *unstructured.Unstructured) {
			unstructured.SetNestedField(b.Object, "InProgress", "status", "phase")
		}), "", ErrBackupNotRestorable, "is InProgress"},
		{"no such location", with(func(_, b *unstructured.Unstructured) {
			unstructured.SetNestedField(b.Object, "elsewhere", "spec", "storageLocation")
		}), "", ErrLocationNotFound, "velero/elsewhere"},
		{"location unavailable", with(func(l, _ *unstructured.Unstructured) {
			unstructured.SetNestedField(l.Object, "Unavailable", "status", "phase")
			unstructured.SetNestedField(l.Object, "the bucket is gone", "status", "message")
		}), "", ErrLocationUnavailable, "velero/default is Unavailable: the bucket is gone"},
		{"no such secret key", with(func(l, _ *unstructured.Unstructured) {
			unstructured.SetNestedField(l.Object, "aws", "spec", "credential", "key")
		}), "", ErrSecretKey, `has no key "aws" (it has cloud)`},
		{"no plugin of the provider", with(func(l, _ *unstructured.Unstructured) {
			unstructured.SetNestedField(l.Object, "aws", "spec", "provider")
		}), "", pluginhost.ErrNoObjectStore, "velero.io/aws: the plugins given serve example.io/dir"},
		{"no tarball under the prefix", with(func(l, _ *unstructured.Unstructured) {
			unstructured.SetNestedField(l.Object, "other", "spec", "objectStorage", "prefix")
		}), "", fs.ErrNotExist, "other/backups/shop-and-fleet/shop-and-fleet.tar.gz"},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := c.backup
			if name == "" {
				name = "shop-and-fleet"
			}
			err := open(c.v, name)
			require.Error(t, err)
			assert.True(t, errors.Is(err, c.is), "%v is %v", err, c.is)
			assert.Contains(t, err.Error(), c.names)
			assert.NotContains(t, err.Error(), "not-to-be-shown")
		})
	}

	// Credentials the store refuses: the plugin's Init says so.
	wrong := secret.DeepCopy()
	wrong.Data["cloud"] = []byte("aws_secret_access_key=not-to-be-shown-either\n")
	err := open(client(wrong, objs...), "shop-and-fleet")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "credentials: not the provider's")
	assert.NotContains(t, err.Error(), "not-to-be-shown")
}

// --from-schedule's backup: the newest that Completed, by start time, or with
// --allow-partially-failed the newest Completed or PartiallyFailed.
func TestLatestOfSchedule(t *testing.T) {
	ctx := context.Background()
	_, objs, secret := store(t, nil)
	nightly := map[string]string{scheduleLabel: "nightly"}
	now := time.Now()
	failed := completed("nightly-4", now, nightly)
	unstructured.SetNestedField(failed.Object, "Failed", "status", "phase")
	partial := completed("nightly-3", now.Add(-time.Minute), nightly)
	unstructured.SetNestedField(partial.Object, "PartiallyFailed", "status", "phase")
	v := client(secret, objs[0], completed("nightly-1", now.Add(-2*time.Hour), nightly),
		completed("nightly-2", now.Add(-time.Hour), nightly), partial, failed, completed("weekly-1", now, map[string]string{scheduleLabel: "weekly"}))
	b, err := v.LatestOfSchedule(ctx, "nightly", false)
	require.NoError(t, err)
	assert.Equal(t, "nightly-2", b.Name)
	assert.Equal(t, "nightly", b.Schedule)
	b, err = v.LatestOfSchedule(ctx, "nightly", true)
	require.NoError(t, err)
	assert.Equal(t, "nightly-3", b.Name, "--allow-partially-failed: the newest Completed or PartiallyFailed")

	_, err = v.LatestOfSchedule(ctx, "hourly", false)
	assert.ErrorIs(t, err, ErrNoBackupOfSchedule)
	assert.Contains(t, err.Error(), "velero/hourly (of 0 backups)")
}

var fastResume = archive.DefaultResume

func init() { fastResume.Duration = 10 * time.Millisecond }

func fileLen(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	return info.Size()
}

// A backup is written through the location's plugin as Velero writes one: bodies of
// any size, an empty one included (the plugin reads the key from the first message),
// read back as written; a body that fails to read stores nothing.
func TestPutThroughTheLocation(t *testing.T) {
	ctx := context.Background()
	root, objs, secret := store(t, nil)
	v := client(secret, objs...)
	loc, err := v.Location(ctx, "default")
	require.NoError(t, err)
	require.NoError(t, loc.Writable())
	h := &pluginhost.Host{}
	defer h.Close()
	st, err := v.OpenLocation(ctx, h, loc, []string{testbin.Plugins(t)})
	require.NoError(t, err)
	defer st.Close()

	big := make([]byte, 3<<20+17)
	for i := range big {
		big[i] = byte(i * 7)
	}
	for key, body := range map[string][]byte{"rg/backups/n/n.tar.gz": big, "rg/backups/n/empty": {}} {
		require.NoError(t, st.Put(ctx, key, bytes.NewReader(body)))
		written, err := os.ReadFile(filepath.Join(root, "velero", filepath.FromSlash(key)))
		require.NoError(t, err)
		assert.Equal(t, body, written, key)
		there, err := st.Exists(ctx, key)
		require.NoError(t, err)
		assert.True(t, there)
	}

	broken := io.MultiReader(bytes.NewReader(big[:2<<20]), iotest.ErrReader(errors.New("disk gone")))
	err = st.Put(ctx, "rg/backups/n/broken", broken)
	assert.ErrorContains(t, err, "disk gone")
	time.Sleep(100 * time.Millisecond) // the plugin has seen the stream end
	_, err = os.Stat(filepath.Join(root, "velero", "rg", "backups", "n", "broken"))
	assert.ErrorIs(t, err, fs.ErrNotExist, "a part is not stored as the whole")

	ro := loc
	ro.AccessMode = "ReadOnly"
	assert.ErrorIs(t, ro.Writable(), ErrLocationReadOnly)
}

// A restore is recorded as Velero records its own: its results, resource list and log
// beside the backups in the location, and a finished Restore object; a name Velero has
// is refused before and after.
func TestRecordRestore(t *testing.T) {
	ctx := context.Background()
	root, objs, secret := store(t, nil)
	v := client(secret, objs...)
	loc, err := v.Location(ctx, "default")
	require.NoError(t, err)
	h := &pluginhost.Host{}
	defer h.Close()
	st, err := v.OpenLocation(ctx, h, loc, []string{testbin.Plugins(t)})
	require.NoError(t, err)
	defer st.Close()

	require.NoError(t, v.CheckRestoreName(ctx, "shop-restore", false))
	rec := RestoreRecord{Name: "shop-restore", Backup: "shop-and-fleet", Started: time.Unix(1700000000, 0), Completed: time.Unix(1700000060, 0),
		Log: []byte("40 objects in 1m0s: 39 restored, 1 failed\n"), Total: 40, Restored: 39}
	rec.AddResource("apps", "v1", "Deployment", "shop2", "web", ItemCreated)
	rec.AddResource("", "v1", "ConfigMap", "shop2", "settings", ItemFailed)
	rec.Errors.Add("shop2", "error restoring configmaps shop2/settings: forbidden")
	rec.Warnings.Add("", "namespaces shop2: adopted")
	assert.Equal(t, velerov1.RestorePhasePartiallyFailed, rec.Phase())
	require.NoError(t, v.RecordRestore(ctx, st, rec))

	dir := filepath.Join(root, "velero", "rg", "restores", "shop-restore")
	var results map[string]Result
	require.NoError(t, json.Unmarshal(gunzipFile(t, filepath.Join(dir, "restore-shop-restore-results.gz")), &results))
	assert.Equal(t, []string{"error restoring configmaps shop2/settings: forbidden"}, results["errors"].Namespaces["shop2"])
	assert.Equal(t, []string{"namespaces shop2: adopted"}, results["warnings"].Cluster)
	var list map[string][]string
	require.NoError(t, json.Unmarshal(gunzipFile(t, filepath.Join(dir, "restore-shop-restore-resource-list.json.gz")), &list))
	assert.Equal(t, map[string][]string{"apps/v1/Deployment": {"shop2/web(created)"}, "v1/ConfigMap": {"shop2/settings(failed)"}}, list)
	assert.Equal(t, rec.Log, gunzipFile(t, filepath.Join(dir, "restore-shop-restore-logs.gz")))

	o, err := v.Dynamic.Resource(RestoresResource).Namespace("velero").Get(ctx, "shop-restore", metav1.GetOptions{})
	require.NoError(t, err)
	phase, _, _ := unstructured.NestedString(o.Object, "status", "phase")
	errs, _, _ := unstructured.NestedInt64(o.Object, "status", "errors")
	backup, _, _ := unstructured.NestedString(o.Object, "spec", "backupName")
	assert.Equal(t, "PartiallyFailed", phase)
	assert.Equal(t, int64(1), errs)
	assert.Equal(t, "shop-and-fleet", backup)
	assert.ErrorIs(t, v.CheckRestoreName(ctx, "shop-restore", true), ErrRestoreExists, "not one restoregraph began")
	assert.ErrorIs(t, v.RecordRestore(ctx, st, rec), ErrRestoreExists, "never recorded twice")

	// A restore restoregraph carries out is begun before it runs, InProgress, so that
	// what plugins make for it is owned by a Restore that is there; a run again from the
	// journal takes it on, under the same UID, and the record finishes it.
	uid, err := v.BeginRestore(ctx, "moved", "shop-and-fleet", map[string]any{"restorePVs": true}, time.Unix(1700000000, 0))
	require.NoError(t, err)
	begun, err := v.Dynamic.Resource(RestoresResource).Namespace("velero").Get(ctx, "moved", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, uid, begun.GetUID())
	phase, _, _ = unstructured.NestedString(begun.Object, "status", "phase")
	assert.Equal(t, "InProgress", phase)
	backup, _, _ = unstructured.NestedString(begun.Object, "spec", "backupName")
	assert.Equal(t, "shop-and-fleet", backup)
	err = v.CheckRestoreName(ctx, "moved", false)
	assert.ErrorIs(t, err, ErrRestoreExists, "a new restore under its name")
	assert.ErrorContains(t, err, "--journal", "which says how to finish it")
	require.NoError(t, v.CheckRestoreName(ctx, "moved", true), "the restore run again")
	again, err := v.BeginRestore(ctx, "moved", "shop-and-fleet", nil, time.Now())
	require.NoError(t, err)
	assert.Equal(t, uid, again)
	moved := rec
	moved.Name = "moved"
	require.NoError(t, v.RecordRestore(ctx, st, moved))
	done, err := v.Dynamic.Resource(RestoresResource).Namespace("velero").Get(ctx, "moved", metav1.GetOptions{})
	require.NoError(t, err)
	phase, _, _ = unstructured.NestedString(done.Object, "status", "phase")
	assert.Equal(t, "PartiallyFailed", phase)
	assert.Equal(t, uid, done.GetUID())
	_, err = v.BeginRestore(ctx, "moved", "shop-and-fleet", nil, time.Now())
	assert.ErrorIs(t, err, ErrRestoreExists, "a finished restore is not begun again")
	_, err = v.BeginRestore(ctx, "shop-restore", "shop-and-fleet", nil, time.Now())
	assert.ErrorIs(t, err, ErrRestoreExists, "nor one restoregraph did not begin")

	// Deleted as velero restore delete has Velero delete them: the restore's files, and
	// not those of a restore whose name it begins.
	other := rec
	other.Name = "shop-restore-2"
	require.NoError(t, st.PutRestoreFiles(ctx, other))
	require.NoError(t, st.DeleteRestoreFiles(ctx, "shop-restore"))
	left, err := os.ReadDir(dir)
	if !errors.Is(err, fs.ErrNotExist) {
		require.NoError(t, err)
		assert.Empty(t, left, "the restore's files")
	}
	kept, err := os.ReadDir(filepath.Join(root, "velero", "rg", "restores", "shop-restore-2"))
	require.NoError(t, err)
	assert.Len(t, kept, 3, "another restore's")
	bl, err := v.BackupLocation(ctx, "shop-and-fleet")
	require.NoError(t, err)
	assert.Equal(t, loc, bl)
	_, err = v.BackupLocation(ctx, "gone")
	assert.ErrorIs(t, err, ErrBackupNotFound)
}

func gunzipFile(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	data, err := io.ReadAll(zr)
	require.NoError(t, err)
	return data
}
