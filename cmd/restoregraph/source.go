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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"golang.org/x/term"

	"github.com/restoregraph/restoregraph/archive"
)

// The stores --backup reads by URL: S3 and every S3-compatible store (MinIO, Ceph,
// versitygw, GCS's interoperable XML API, R2, ...) through the AWS SDK's own S3 client,
// with its usual credential chain (environment, shared files, SSO, web identity,
// instance roles); and a directory. The SDK's S3 client alone keeps the command's
// dependencies to what S3 needs: gocloud.dev/blob would add GCS's and Azure's SDKs
// (about 520 more packages to compile); those stores are reached through Velero's own
// object-store plugins instead, as Velero reaches them.
var backupSchemes = []string{"s3", "file"}

// The options a URL's query may set, named as Velero's BackupStorageLocation names them
// (and as the SDKs do).
var s3Options = map[string]string{
	"region": "region", "s3Url": "endpoint", "endpoint": "endpoint",
	"s3ForcePathStyle": "pathStyle", "use_path_style": "pathStyle", "profile": "profile",
}

const (
	backupUsage = "the backup: a tarball (Velero format), or a URL of one kept as Velero keeps it: s3://BUCKET/PREFIX/NAME " +
		"(PREFIX/backups/NAME/NAME.tar.gz) or file:///DIR/PREFIX/NAME; a URL's query sets the store's options as a BackupStorageLocation does (region, s3Url, s3ForcePathStyle, profile)"
	s3EndpointUsage = "the address of an S3-compatible store (MinIO, Ceph, versitygw, ...) for an s3:// --backup, with path-style requests"
)

// backupLocation is where --backup names a backup: a local tarball, or the tarball's
// key in a bucket.
type backupLocation struct {
	file   string // a local tarball
	bucket string // s3://: the bucket, and the store's options
	s3     s3Store
	dir    string // file://: the directory the key is under
	key    string
	url    string // as given, for messages
}

// s3Store is how to reach an S3 store: what is not set comes from the SDK's chain.
type s3Store struct {
	region, endpoint, profile string
	pathStyle                 bool
}

// parseBackupLocation reads --backup. A URL names a backup as Velero keeps it:
// SCHEME://BUCKET/PREFIX/NAME (or .../PREFIX/backups/NAME) is the tarball
// PREFIX/backups/NAME/NAME.tar.gz, and a path ending in .tar.gz is that object. The
// query sets the store's options as a BackupStorageLocation does (region, s3Url,
// s3ForcePathStyle, profile); endpoint, when set, is an S3-compatible store's address.
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
	loc.bucket = u.Host
	for k, v := range u.Query() {
		opt, ok := s3Options[k]
		if !ok {
			return backupLocation{}, badInput("--backup %q: %q is not an option of an s3:// URL (region, s3Url, s3ForcePathStyle, profile)", raw, k)
		}
		switch opt {
		case "region":
			loc.s3.region = v[0]
		case "endpoint":
			loc.s3.endpoint = v[0]
		case "profile":
			loc.s3.profile = v[0]
		case "pathStyle":
			loc.s3.pathStyle = v[0] == "true"
		}
	}
	if endpoint != "" {
		loc.s3.endpoint, loc.s3.pathStyle = endpoint, true
	}
	if loc.s3.endpoint != "" && loc.s3.region == "" && os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		loc.s3.region = "us-east-1" // S3-compatible stores sign with one, and most take any
	}
	return loc, nil
}

// readBackup reads the backup --backup names; closeAll releases it. A
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
		b, err := archive.ReadFile(ctx, loc.file, archive.Options{})
		if err != nil {
			return nil, nil, badInput("backup %s: %w", loc.file, err)
		}
		return b, func() { b.Close() }, nil
	}
	var src archive.Source
	if loc.dir != "" {
		src = archive.DirSource(loc.dir)
	} else {
		client, err := loc.s3.client(ctx)
		if err != nil {
			return nil, nil, badInput("--backup %s: %v", loc.url, err)
		}
		src = bucketSource{client: client, bucket: loc.bucket}
	}
	meter := &meteredSource{src: src}
	stop := meter.show(progress, loc.url)
	b, err = archive.Open(ctx, meter, loc.key, archive.Options{})
	stop()
	if err != nil {
		return nil, nil, sourceError(loc.url, err)
	}
	return b, func() {
		reportRead(progress, loc.url, b)
		b.Close()
	}, nil
}

// reportRead says what reading b from its store took: the bytes read of the tarball
// (a plan of a backup that carries its manifest stops early), and how often the read
// was resumed where the download broke.
func reportRead(progress io.Writer, name string, b *archive.Backup) {
	if progress == nil {
		return
	}
	st := b.SourceStats()
	of := ""
	if st.Size > 0 {
		of = fmt.Sprintf(" of %d (%d%%)", st.Size, 100*st.Bytes/st.Size)
	}
	resumed := ""
	switch st.Resumed {
	case 0:
	case 1:
		resumed = ", resumed 1 time where the download broke"
	default:
		resumed = fmt.Sprintf(", resumed %d times where the download broke", st.Resumed)
	}
	fmt.Fprintf(progress, "read %s: %d bytes%s%s\n", name, st.Bytes, of, resumed)
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

// client is an S3 client of the store, its credentials from the SDK's chain.
func (st s3Store) client(ctx context.Context) (*s3.Client, error) {
	var opts []func(*config.LoadOptions) error
	if st.region != "" {
		opts = append(opts, config.WithRegion(st.region))
	}
	if st.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(st.profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if st.endpoint != "" {
			o.BaseEndpoint = aws.String(st.endpoint)
		}
		o.UsePathStyle = st.pathStyle
	}), nil
}

// bucketSource is an archive.Source over an S3 bucket: ranged GETs, and the store's
// not-found and access-denied answers as fs's errors.
type bucketSource struct {
	client *s3.Client
	bucket string
}

func (s bucketSource) Open(ctx context.Context, key string, offset int64) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: &key}
	if offset > 0 {
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", offset))
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		var api smithy.APIError
		var resp *smithyhttp.ResponseError
		switch {
		case errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NoSuchBucket" || api.ErrorCode() == "NotFound"):
			return nil, fmt.Errorf("%w: %v", fs.ErrNotExist, err)
		case errors.As(err, &api) && (api.ErrorCode() == "AccessDenied" || api.ErrorCode() == "InvalidAccessKeyId" || api.ErrorCode() == "SignatureDoesNotMatch"):
			return nil, fmt.Errorf("%w: %v", fs.ErrPermission, err)
		case errors.As(err, &resp) && resp.HTTPStatusCode() == 404:
			return nil, fmt.Errorf("%w: %v", fs.ErrNotExist, err)
		case errors.As(err, &resp) && resp.HTTPStatusCode() == 403:
			return nil, fmt.Errorf("%w: %v", fs.ErrPermission, err)
		}
		return nil, err
	}
	return &s3Object{ReadCloser: out.Body, size: objectSize(out, offset)}, nil
}

// objectSize is the whole object's length: Content-Range's total for a ranged GET.
func objectSize(out *s3.GetObjectOutput, offset int64) int64 {
	if r := aws.ToString(out.ContentRange); r != "" {
		if i := strings.LastIndexByte(r, '/'); i >= 0 {
			var n int64
			if _, err := fmt.Sscan(r[i+1:], &n); err == nil {
				return n
			}
		}
	}
	if out.ContentLength != nil {
		return offset + *out.ContentLength
	}
	return -1
}

type s3Object struct {
	io.ReadCloser
	size int64
}

func (o *s3Object) Size() int64 { return o.size }

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
