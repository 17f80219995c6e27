package image

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The layout holds an image per platform, read back as a registry or containerd reads
// it: each runs the command as 65532, not root, for its own OS and architecture; its
// file system is the command, Velero's command where one is given, the CA bundle and
// the user's files, nothing writable by the user but its home and /tmp; and the same
// binaries make the same digests.
func TestImageConfigurationReadBack(t *testing.T) {
	dir := t.TempDir()
	bins := map[string]string{}
	var platforms []Platform
	for _, arch := range []string{"amd64", "arm64"} {
		bins[arch] = filepath.Join(dir, "restoregraph-"+arch)
		require.NoError(t, os.WriteFile(bins[arch], []byte("the command for "+arch), 0o755))
		p := Platform{OS: "linux", Architecture: arch, Binary: bins[arch]}
		if arch == "amd64" {
			p.Velero = filepath.Join(dir, "velero-"+arch)
			require.NoError(t, os.WriteFile(p.Velero, []byte("Velero's command for "+arch), 0o755))
		}
		platforms = append(platforms, p)
	}
	certs := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(certs, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644))
	opts := Options{Platforms: platforms, CACertificates: certs, Version: "v0.1.0", Source: "https://github.com/restoregraph/restoregraph"}
	out := filepath.Join(dir, "image")
	written, err := Write(out, opts)
	require.NoError(t, err)

	p, err := layout.FromPath(out)
	require.NoError(t, err)
	idx, err := p.ImageIndex()
	require.NoError(t, err)
	manifest, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, manifest.Manifests, 1, "the layout names one index")
	assert.Equal(t, "v0.1.0", manifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	inner, err := idx.ImageIndex(manifest.Manifests[0].Digest)
	require.NoError(t, err)
	im, err := inner.IndexManifest()
	require.NoError(t, err)
	assert.Equal(t, types.OCIImageIndex, im.MediaType)
	require.Len(t, im.Manifests, 2)
	for _, d := range im.Manifests {
		require.NotNil(t, d.Platform)
		arch := d.Platform.Architecture
		assert.Equal(t, "linux", d.Platform.OS)
		img, err := inner.Image(d.Digest)
		require.NoError(t, err)
		mt, err := img.MediaType()
		require.NoError(t, err)
		assert.Equal(t, types.OCIManifestSchema1, mt)
		cfg, err := img.ConfigFile()
		require.NoError(t, err)
		assert.Equal(t, arch, cfg.Architecture)
		assert.Equal(t, "linux", cfg.OS)
		assert.Equal(t, []string{"/restoregraph"}, cfg.Config.Entrypoint)
		assert.Equal(t, "65532:65532", cfg.Config.User)
		assert.Contains(t, cfg.Config.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt")
		assert.Equal(t, "v0.1.0", cfg.Config.Labels["org.opencontainers.image.version"])

		layers, err := img.Layers()
		require.NoError(t, err)
		require.Len(t, layers, 1)
		rc, err := layers[0].Uncompressed()
		require.NoError(t, err)
		files := map[string]*tar.Header{}
		contents := map[string]string{}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			files[h.Name] = h
			data, err := io.ReadAll(tr)
			require.NoError(t, err)
			contents[h.Name] = string(data)
		}
		require.NoError(t, rc.Close())
		assert.Equal(t, "the command for "+arch, contents["restoregraph"], "the platform's own command")
		assert.EqualValues(t, 0o755, files["restoregraph"].Mode)
		assert.Equal(t, 0, files["restoregraph"].Uid, "the command is root's: the user cannot change it")
		assert.Equal(t, "-----BEGIN CERTIFICATE-----\n", contents["etc/ssl/certs/ca-certificates.crt"])
		assert.Contains(t, contents["etc/passwd"], "nonroot:x:65532:65532:")
		assert.Contains(t, contents["etc/group"], "nonroot:x:65532:")
		for name, h := range files {
			if h.Uid == User {
				assert.Equal(t, "home/nonroot/", name, "only the user's home is the user's")
			}
		}
		assert.EqualValues(t, 0o1777, files["tmp/"].Mode)
		if arch == "amd64" {
			assert.Equal(t, "Velero's command for amd64", contents["velero"], "Velero's command at /velero")
			assert.EqualValues(t, 0o755, files["velero"].Mode)
			assert.Len(t, files, 11, "nothing else in the file system")
		} else {
			assert.NotContains(t, files, "velero", "none given, none in the image")
			assert.Len(t, files, 10, "nothing else in the file system")
		}
	}

	again, err := Write(filepath.Join(dir, "again"), opts)
	require.NoError(t, err)
	d1, err := written.Digest()
	require.NoError(t, err)
	d2, err := again.Digest()
	require.NoError(t, err)
	assert.Equal(t, d1, d2, "the same binaries, the same image")
}

// A platform whose command or Velero's is missing names it; so does a missing CA
// bundle.
func TestImageRefusesWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	certs := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(certs, []byte("x"), 0o644))
	_, err := Write(filepath.Join(dir, "out"), Options{CACertificates: certs, Version: "v1",
		Platforms: []Platform{{OS: "linux", Architecture: "arm64", Binary: filepath.Join(dir, "nope")}}})
	require.ErrorContains(t, err, "linux/arm64")
	_, err = Write(filepath.Join(dir, "out"), Options{CACertificates: filepath.Join(dir, "none"), Version: "v1",
		Platforms: []Platform{{OS: "linux", Architecture: "amd64", Binary: certs}}})
	require.ErrorContains(t, err, "CA certificates")
	_, err = Write(filepath.Join(dir, "out"), Options{CACertificates: certs, Version: "v1",
		Platforms: []Platform{{OS: "linux", Architecture: "amd64", Binary: certs, Velero: filepath.Join(dir, "nope")}}})
	require.ErrorContains(t, err, "linux/amd64: Velero's command")
}
