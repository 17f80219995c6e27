package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // azblob://
	_ "gocloud.dev/blob/gcsblob"   // gs://
	_ "gocloud.dev/blob/s3blob"    // s3://
	"gocloud.dev/gcerrors"
	"golang.org/x/term"

	"github.com/restoregraph/restoregraph/archive"
)

// The object stores --backup reads by URL, through gocloud.dev/blob: one API for S3 and
// S3-compatible stores, GCS and Azure Blob, each with its SDK's usual credential chain
// (environment, shared files, workload identity), so no provider code is ours.
var backupSchemes = []string{"s3", "gs", "azblob", "file"}

const (
	backupUsage = "the backup: a tarball (Velero format), or a URL of one kept as Velero keeps it: s3://BUCKET/PREFIX/NAME " +
		"(PREFIX/backups/NAME/NAME.tar.gz), gs://, azblob://, file://; a URL's query sets the store's options (region, endpoint, use_path_style, ...)"
	s3EndpointUsage = "the address of an S3-compatible store (MinIO, Ceph, versitygw, ...) for an s3:// --backup, with path-style requests"
)

// backupLocation is where --backup names a backup: a local tarball, or the tarball's
// key in a bucket.
type backupLocation struct {
	file   string // a local tarball
	bucket string // the bucket URL gocloud opens (scheme, bucket and query)
	dir    string // file://: the directory the key is under
	key    string
	url    string // as given, for messages
}

// parseBackupLocation reads --backup. A URL names a backup as Velero keeps it:
// SCHEME://BUCKET/PREFIX/NAME (or .../PREFIX/backups/NAME) is the tarball
// PREFIX/backups/NAME/NAME.tar.gz, and a path ending in .tar.gz is that object. The
// query is the store's (gocloud.dev's URL options: region, endpoint, use_path_style, …);
// endpoint, when set, is an S3-compatible store's address.
func parseBackupLocation(raw, endpoint string) (backupLocation, error) {
	if !strings.Contains(raw, "://") {
		if endpoint != "" {
			return backupLocation{}, badInput("--s3-endpoint is for a backup named by an s3:// URL, not the file %s", raw)
		}
		return backupLocation{file: raw, url: raw}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return backupLocation{}, badInput("--backup %q: %v", raw, err)
	}
	known := false
	for _, s := range backupSchemes {
		known = known || u.Scheme == s
	}
	if !known {
		return backupLocation{}, badInput("--backup %q: the scheme %q is not one of %s", raw, u.Scheme, strings.Join(backupSchemes, ", "))
	}
	if endpoint != "" && u.Scheme != "s3" {
		return backupLocation{}, badInput("--s3-endpoint is for s3:// URLs, not %s://", u.Scheme)
	}
	p := strings.Trim(u.Path, "/")
	if u.Scheme == "file" && u.Host != "" {
		return backupLocation{}, badInput("--backup %q: a file URL has no host (file:///path/to/NAME)", raw)
	}
	if u.Scheme != "file" && u.Host == "" {
		return backupLocation{}, badInput("--backup %q: no bucket (%s://BUCKET/PREFIX/NAME)", raw, u.Scheme)
	}
	if p == "" {
		return backupLocation{}, badInput("--backup %q: no backup named (%s://BUCKET/PREFIX/NAME)", raw, u.Scheme)
	}
	key := p
	if !strings.HasSuffix(p, ".tar.gz") {
		dir, name := path.Split(p)
		dir = strings.TrimSuffix(dir, "/")
		if dir == "backups" || strings.HasSuffix(dir, "/backups") {
			dir = strings.TrimSuffix(dir, "backups")
		}
		key = archive.TarballKey(dir, name)
	}
	loc := backupLocation{key: key, url: raw}
	if u.Scheme == "file" {
		loc.dir = "/"
		return loc, nil
	}
	q := u.Query()
	if endpoint != "" {
		q.Set("endpoint", endpoint)
		q.Set("use_path_style", "true")
		if q.Get("region") == "" && os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
			q.Set("region", "us-east-1") // S3-compatible stores sign with one, and most take any
		}
	}
	loc.bucket = (&url.URL{Scheme: u.Scheme, Host: u.Host, RawQuery: q.Encode()}).String()
	return loc, nil
}

// readBackup reads the backup --backup names; close releases it and the bucket. A
// backup that cannot be found or read is bad input; a store that cannot be reached is
// not (exitUnreachable).
func readBackup(ctx context.Context, raw, endpoint string, progress io.Writer) (b *archive.Backup, closeAll func(), err error) {
	if raw == "" {
		return nil, nil, badInput("--backup is required")
	}
	loc, err := parseBackupLocation(raw, endpoint)
	if err != nil {
		return nil, nil, err
	}
	if loc.file != "" {
		b, err := archive.ReadFile(loc.file, archive.Options{})
		if err != nil {
			return nil, nil, badInput("backup %s: %w", loc.file, err)
		}
		return b, func() { b.Close() }, nil
	}
	var src archive.Source
	release := func() {}
	if loc.dir != "" {
		src = archive.DirSource(loc.dir)
	} else {
		bucket, err := blob.OpenBucket(ctx, loc.bucket)
		if err != nil {
			return nil, nil, badInput("--backup %s: %v", loc.url, err)
		}
		src, release = bucketSource{bucket}, func() { bucket.Close() }
	}
	meter := &meteredSource{src: src}
	stop := meter.show(progress, loc.url)
	b, err = archive.Open(ctx, meter, loc.key, archive.Options{})
	stop()
	if err != nil {
		release()
		return nil, nil, sourceError(loc.url, err)
	}
	return b, func() {
		if st := b.SourceStats(); st.Resumed > 0 && progress != nil {
			times := "times"
			if st.Resumed == 1 {
				times = "time"
			}
			fmt.Fprintf(progress, "read %s: %s, resumed %d %s where the download broke\n", loc.url, mib(st.Bytes), st.Resumed, times)
		}
		b.Close()
		release()
	}, nil
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

// bucketSource is an archive.Source over a gocloud bucket: ranged reads, and the
// store's not-found and permission errors as fs's.
type bucketSource struct{ bucket *blob.Bucket }

func (s bucketSource) Open(ctx context.Context, key string, offset int64) (io.ReadCloser, error) {
	r, err := s.bucket.NewRangeReader(ctx, key, offset, -1, nil)
	switch gcerrors.Code(err) {
	case gcerrors.OK:
		return r, nil // *blob.Reader's Size is the whole object's
	case gcerrors.NotFound:
		return nil, fmt.Errorf("%w: %v", fs.ErrNotExist, err)
	case gcerrors.PermissionDenied:
		return nil, fmt.Errorf("%w: %v", fs.ErrPermission, err)
	}
	return nil, err
}

// meteredSource counts the bytes read from a source, to show them as they arrive.
type meteredSource struct {
	src  archive.Source
	read atomic.Int64
	size atomic.Int64
}

func (m *meteredSource) Open(ctx context.Context, key string, offset int64) (io.ReadCloser, error) {
	rc, err := m.src.Open(ctx, key, offset)
	if err != nil {
		return nil, err
	}
	if s, ok := rc.(archive.Sized); ok {
		m.size.Store(s.Size())
	}
	return &meteredReader{ReadCloser: rc, m: m, sized: rc}, nil
}

type meteredReader struct {
	io.ReadCloser
	m     *meteredSource
	sized io.ReadCloser
}

func (r *meteredReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.m.read.Add(int64(n))
	return n, err
}

// Size passes the source's Size on, so that a connection that ends early is still told.
func (r *meteredReader) Size() int64 {
	if s, ok := r.sized.(archive.Sized); ok {
		return s.Size()
	}
	return -1
}

// show draws a line of bytes read and rate on w while the backup is read, when w is a
// terminal; stop erases it.
func (m *meteredSource) show(w io.Writer, name string) (stop func()) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return func() {}
	}
	start := time.Now()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-t.C:
				read, size := m.read.Load(), m.size.Load()
				rate := float64(read) / time.Since(start).Seconds()
				of := ""
				if size > 0 {
					of = fmt.Sprintf(" of %s (%d%%)", mib(size), 100*read/size)
				}
				fmt.Fprintf(w, "\rreading %s: %s%s, %s/s\033[K", name, mib(read), of, mib(int64(rate)))
			}
		}
	}()
	return func() { close(done); <-finished }
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
