// Package image writes restoregraph's controller image without a container daemon: an
// OCI image layout (what registries, crane, skopeo and containerd read) holding one
// image per platform. Each is a single layer on nothing: the command, built static for
// its platform; the CA certificates it trusts; /etc/passwd and /etc/group naming the
// non-root user 65532 it runs as, with its home; and /tmp. Nothing else is in the file
// system, and nothing in it is written at run time but /tmp (which the Deployment
// mounts, its root file system read-only). With Velero's own command beside it (at
// /velero, where Velero's image has it), the controller runs Velero's built-in actions:
// the CSI, pod-volume and data-movement ones that restore volumes. Files carry fixed times and owners, so the
// same binaries make the same image, digest for digest.
package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the user and group the image runs as: not root, and the same number as
// distroless's nonroot, which clusters' policies commonly expect.
const User = 65532

// Entrypoint is where the command is in the image, and what it runs.
const Entrypoint = "/restoregraph"

// Velero is where Velero's own command is in the image, when it holds one: the
// controller runs it as Velero's server runs itself, for Velero's built-in plugins
// (restoregraph controller --plugin /velero).
const Velero = "/velero"

// CACertificates is where the CA bundle is in the image: where Go's crypto/x509 looks
// first on Linux.
const CACertificates = "/etc/ssl/certs/ca-certificates.crt"

// Platform is one platform of the image and the command built for it.
type Platform struct {
	OS, Architecture string
	// Binary is the path of the restoregraph command built for the platform, static
	// (CGO_ENABLED=0).
	Binary string
	// Velero is the path of Velero's velero command built for the platform, static,
	// put at /velero; "" for none.
	Velero string
}

// Options say what Write writes.
type Options struct {
	Platforms []Platform
	// CACertificates is the path of the PEM bundle of CA certificates the image trusts.
	CACertificates string
	// Version names the image: the org.opencontainers.image.version label, and the
	// layout's ref name.
	Version string
	// Source is the org.opencontainers.image.source label.
	Source string
}

// epoch is every file's and the image's time: the same inputs make the same digests.
var epoch = time.Unix(0, 0).UTC()

// Write writes the image of opts as an OCI image layout in dir, one manifest per
// platform under one index the layout names by opts.Version, and returns that index.
func Write(dir string, opts Options) (v1.ImageIndex, error) {
	if len(opts.Platforms) == 0 {
		return nil, fmt.Errorf("image: no platform")
	}
	certs, err := os.ReadFile(opts.CACertificates)
	if err != nil {
		return nil, fmt.Errorf("image: CA certificates: %w", err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range opts.Platforms {
		img, err := platformImage(p, certs, opts)
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: p.OS, Architecture: p.Architecture},
		}})
	}
	// The layout names one thing, the index of the platforms' images, by the version.
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": opts.Version})); err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	return idx, nil
}

func platformImage(p Platform, certs []byte, opts Options) (v1.Image, error) {
	bin, err := os.ReadFile(p.Binary)
	if err != nil {
		return nil, fmt.Errorf("image: %s/%s: %w", p.OS, p.Architecture, err)
	}
	var velero []byte
	if p.Velero != "" {
		if velero, err = os.ReadFile(p.Velero); err != nil {
			return nil, fmt.Errorf("image: %s/%s: Velero's command: %w", p.OS, p.Architecture, err)
		}
	}
	files, err := fileSystem(bin, velero, certs)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(files)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	img := mutate.MediaType(mutate.ConfigMediaType(empty.Image, types.OCIConfigJSON), types.OCIManifestSchema1)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = p.OS, p.Architecture, v1.Time{Time: epoch}
	cfg.Config.Entrypoint = []string{Entrypoint}
	cfg.Config.User = fmt.Sprintf("%d:%d", User, User)
	cfg.Config.WorkingDir = "/home/nonroot"
	cfg.Config.Env = []string{"PATH=/", "HOME=/home/nonroot", "SSL_CERT_FILE=" + CACertificates}
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.version": opts.Version, "org.opencontainers.image.source": opts.Source,
		"org.opencontainers.image.title": "restoregraph"}
	return mutate.ConfigFile(img, cfg)
}

// fileSystem is the layer's tar: every directory and file of the image; Velero's
// command only when velero is not nil.
func fileSystem(bin, velero, certs []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, owner int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: owner, Gid: owner, ModTime: epoch, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", User, User)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", User)
	for _, step := range []func() error{
		func() error { return dir("etc/", 0o755, 0) },
		func() error { return file("etc/passwd", 0o644, []byte(passwd)) },
		func() error { return file("etc/group", 0o644, []byte(group)) },
		func() error { return dir("etc/ssl/", 0o755, 0) },
		func() error { return dir("etc/ssl/certs/", 0o755, 0) },
		func() error { return file(CACertificates[1:], 0o644, certs) },
		func() error { return dir("home/", 0o755, 0) },
		func() error { return dir("home/nonroot/", 0o700, User) },
		func() error { return dir("tmp/", 0o1777, 0) },
		func() error { return file(Entrypoint[1:], 0o755, bin) },
		func() error {
			if velero == nil {
				return nil
			}
			return file(Velero[1:], 0o755, velero)
		},
	} {
		if err := step(); err != nil {
			return nil, fmt.Errorf("image: layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
