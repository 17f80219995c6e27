package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/manifest"
)

func TestBackupName(t *testing.T) {
	for _, raw := range []string{"nightly.tar.gz", "/srv/nightly.tar.gz", "s3://bucket/velero/nightly?region=x", "s3://bucket/velero/backups/nightly/", "file:///srv/nightly.tar.gz"} {
		assert.Equal(t, "nightly", backupName(raw), raw)
	}
}

// A backup kept as Velero keeps it is planned and restored by URL, as from the file;
// one that is not there is bad input naming it; a store that does not answer is
// exit code 3.
func TestBackupByURL(t *testing.T) {
	tarball := capiTarball(t, 1)
	root := t.TempDir()
	dir := filepath.Join(root, "velero", "backups", "nightly")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.Rename(tarball, filepath.Join(dir, "nightly.tar.gz")))
	url := "file://" + filepath.ToSlash(filepath.Join(root, "velero", "nightly"))

	fromFile := rg(t, "plan", "--backup", filepath.Join(dir, "nightly.tar.gz"), "--embedded", "-o", "json")
	require.Equal(t, 0, fromFile.code, fromFile.stderr)
	fromURL := rg(t, "plan", "--backup", url, "--embedded", "-o", "json")
	require.Equal(t, 0, fromURL.code, fromURL.stderr)
	// One plan, but for where each says the backup is kept.
	var file, byURL map[string]any
	require.NoError(t, json.Unmarshal([]byte(fromFile.stdout), &file))
	require.NoError(t, json.Unmarshal([]byte(fromURL.stdout), &byURL))
	assert.Equal(t, filepath.Join(dir, "nightly.tar.gz"), file["backup"].(map[string]any)["location"])
	assert.Equal(t, url, byURL["backup"].(map[string]any)["location"])
	file["backup"].(map[string]any)["location"] = url
	assert.Equal(t, file, byURL)
	assert.Regexp(t, `read file://\S+/velero/nightly: \d+ bytes of \d+ \(\d+%\)`, fromURL.stderr, "what the read took is told")

	r := rg(t, "restore", "--backup", url, "--embedded")
	assert.Equal(t, 0, r.code, r.stderr)

	r = rg(t, "plan", "--backup", "file://"+filepath.ToSlash(filepath.Join(root, "velero", "weekly")), "--embedded")
	assert.Equal(t, exitBadInput, r.code, r.stderr)
	assert.Contains(t, r.stderr, "velero/backups/weekly/weekly.tar.gz")

	// Nothing listens where the store should be.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	cmd := []string{"plan", "--backup", "s3://bucket/velero/nightly", "--s3-endpoint", "http://" + addr, "--embedded"}
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	r = rg(t, cmd...)
	assert.Equal(t, exitUnreachable, r.code, r.stderr)
	assert.Contains(t, r.stderr, "velero/backups/nightly/nightly.tar.gz")
}

// backup -o URL writes the backup where Velero keeps them, with what Velero's backup
// sync and describe read beside it; it is then planned by the same URL. (What Velero
// makes of it is TestVeleroRestoresARestoregraphBackup's.)
func TestBackupToURL(t *testing.T) {
	root := t.TempDir()
	url := "file://" + filepath.ToSlash(filepath.Join(root, "velero", "nightly"))
	r := rg(t, "backup", "-o", url, "--embedded", "--location-name", "primary")
	require.Equal(t, 0, r.code, r.stderr)
	dir := filepath.Join(root, "velero", "backups", "nightly")
	b, err := archive.ReadFile(context.Background(), filepath.Join(dir, "nightly.tar.gz"), archive.Options{})
	require.NoError(t, err)
	defer b.Close() // the embedded server holds nothing: the objects are in the integration test's

	beside, err := manifest.ReadFile(filepath.Join(dir, "nightly-manifest.json.gz"))
	require.NoError(t, err)
	assert.Equal(t, b.Manifest().Len(), beside.Len(), "the manifest beside the tarball is the one in it")

	var obj struct {
		Metadata struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			StorageLocation    string   `json:"storageLocation"`
			IncludedNamespaces []string `json:"includedNamespaces"`
		} `json:"spec"`
		Status struct {
			Phase         string `json:"phase"`
			FormatVersion string `json:"formatVersion"`
			Progress      struct {
				TotalItems int `json:"totalItems"`
			} `json:"progress"`
		} `json:"status"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "velero-backup.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &obj))
	assert.Equal(t, "nightly", obj.Metadata.Name)
	assert.Equal(t, "primary", obj.Spec.StorageLocation)
	assert.Equal(t, "primary", obj.Metadata.Labels["velero.io/storage-location"])
	assert.Equal(t, []string{"*"}, obj.Spec.IncludedNamespaces)
	assert.Equal(t, "Completed", obj.Status.Phase)
	assert.Equal(t, "1.1.0", obj.Status.FormatVersion)
	assert.Equal(t, b.Manifest().Len(), obj.Status.Progress.TotalItems)

	var list map[string][]string
	require.NoError(t, json.Unmarshal(gunzip(t, filepath.Join(dir, "nightly-resource-list.json.gz")), &list))
	listed := 0
	for _, names := range list {
		listed += len(names)
	}
	assert.Equal(t, b.Manifest().Len(), listed, "the resource list names every object")
	assert.Contains(t, string(gunzip(t, filepath.Join(dir, "nightly-logs.gz"))), "objects (")

	plan := rg(t, "plan", "--backup", url, "--embedded")
	assert.Equal(t, 0, plan.code, plan.stderr)

	// A backup is never written over: the second is refused before anything is read,
	// and the first is as it was.
	before, err := os.ReadFile(filepath.Join(dir, "nightly.tar.gz"))
	require.NoError(t, err)
	again := rg(t, "backup", "-o", url, "--embedded")
	assert.Equal(t, exitBadInput, again.code, again.stderr)
	assert.Contains(t, again.stderr, "a backup of that name is in the location already: nightly")
	after, err := os.ReadFile(filepath.Join(dir, "nightly.tar.gz"))
	require.NoError(t, err)
	assert.Equal(t, before, after, "the first backup is untouched")
	st, err := os.Stat(filepath.Join(dir, "nightly.tar.gz"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "a backup holds Secrets: only its owner reads it")
}

// backup --storage-location checks what it is given before it reads the cluster.
func TestBackupDestinationFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		says string
	}{
		"nowhere":            {[]string{"backup", "--embedded"}, "-o FILE|URL or --storage-location LOCATION is required"},
		"two places":         {[]string{"backup", "--embedded", "-o", "b.tar.gz", "--storage-location", "default"}, "give one"},
		"no name":            {[]string{"backup", "--embedded", "--storage-location", "default", "--plugins", "/p"}, "needs --name"},
		"no plugins":         {[]string{"backup", "--embedded", "--storage-location", "default", "--name", "n"}, "--plugins"},
		"name with -o":       {[]string{"backup", "--embedded", "-o", "b.tar.gz", "--name", "n"}, "are for --storage-location"},
		"not a name":         {[]string{"backup", "--embedded", "--storage-location", "default", "--name", "Not_A_Name", "--plugin", "/p"}, `--name "Not_A_Name"`},
		"endpoint, location": {[]string{"backup", "--embedded", "--storage-location", "default", "--name", "n", "--plugin", "/p", "--s3-endpoint", "http://127.0.0.1:1"}, "--s3-endpoint is for -o"},
	} {
		t.Run(name, func(t *testing.T) {
			r := rg(t, tc.args...)
			assert.Equal(t, exitBadInput, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.says)
		})
	}
}

func gunzip(t *testing.T, path string) []byte {
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
