package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/progress"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero"
	"github.com/restoregraph/restoregraph/velero/bucket"
)

const (
	backupUsage = "the backup: a tarball (Velero format), or a URL of one kept as Velero keeps it: s3://BUCKET/PREFIX/NAME " +
		"(PREFIX/backups/NAME/NAME.tar.gz) or file:///DIR/PREFIX/NAME; a URL's query sets the store's options as a BackupStorageLocation does (region, s3Url, s3ForcePathStyle, profile)"
	s3EndpointUsage = "the address of an S3-compatible store (MinIO, Ceph, versitygw, ...) for an s3:// --backup, with path-style requests"
)

// parseURL reads a URL that names a backup, for the flag named flag: one that names
// none is bad input.
func parseURL(flag, raw, endpoint string) (bucket.URL, error) {
	u, err := bucket.Parse(raw, endpoint)
	if err != nil {
		return u, badInput("%s %w", flag, err)
	}
	return u, nil
}

// readBackup reads the backup --backup names: a local tarball, or a URL; closeAll
// releases it. A backup that cannot be found or read is bad input; a store that cannot
// be reached is not (exitUnreachable).
func readBackup(ctx context.Context, raw, endpoint string, warn io.Writer) (b *archive.Backup, closeAll func(), err error) {
	switch {
	case raw == "":
		return nil, nil, badInput("--backup is required")
	case !bucket.IsURL(raw) && endpoint != "":
		return nil, nil, badInput("--s3-endpoint is for a backup named by an s3:// URL, not the file %s", raw)
	case !bucket.IsURL(raw):
		b, err := archive.ReadFile(ctx, raw, archive.Options{})
		if err != nil {
			return nil, nil, badInput("backup %s: %w", raw, err)
		}
		return b, func() { b.Close() }, nil
	}
	u, err := parseURL("--backup", raw, endpoint)
	if err != nil {
		return nil, nil, err
	}
	store, err := u.Open(ctx)
	if err != nil {
		return nil, nil, badInput("--backup %w", err)
	}
	meter := &progress.Meter{Source: store}
	stop := meter.Show(warn, u.Raw)
	b, err = archive.Open(ctx, meter, u.Key, archive.Options{})
	stop()
	if err != nil {
		return nil, nil, sourceError(u.Raw, err)
	}
	return b, func() {
		progress.ReportRead(warn, u.Raw, b)
		b.Close()
	}, nil
}

// backupVolumes reads Velero's records of the volumes of the backup --backup names,
// beside its tarball (NAME-volumeinfo.json.gz, NAME-volumesnapshots.json.gz): none for
// a tarball that has none beside it.
func backupVolumes(ctx context.Context, raw, endpoint string) ([]restore.Volume, error) {
	src, key := archive.Source(archive.DirSource(filepath.Dir(raw))), filepath.Base(raw)
	if bucket.IsURL(raw) {
		u, err := parseURL("--backup", raw, endpoint)
		if err != nil {
			return nil, err
		}
		store, err := u.Open(ctx)
		if err != nil {
			return nil, badInput("--backup %w", err)
		}
		src, key = store, u.Key
	}
	vols, err := velero.ReadVolumes(ctx, src, key)
	if err != nil {
		return nil, badInput("%w", err)
	}
	return vols, nil
}

// sourceError says why a backup in a store could not be read, with the exit code that
// tells a script whether the input was wrong or the store out of reach.
func sourceError(url string, err error) error {
	var se *archive.SourceError
	if errors.As(err, &se) && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
		return &exitError{code: exitUnreachable, err: fmt.Errorf("backup %s: %w", url, err)}
	}
	return badInput("backup %s: %w", url, err)
}

// backupName is the backup's name, from its file's or URL's: nightly.tar.gz is nightly,
// and so is s3://bucket/velero/nightly.
func backupName(raw string) string {
	if bucket.IsURL(raw) {
		if u, err := bucket.Parse(raw, ""); err == nil {
			return u.Name()
		}
	}
	base := filepath.Base(raw)
	for _, ext := range []string{".tar.gz", ".tgz", ".tar"} {
		base = strings.TrimSuffix(base, ext)
	}
	return base
}
