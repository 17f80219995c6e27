// Package bucket reaches a bucket where Velero keeps backups directly, by URL, without
// Velero's objects or plugins: s3://BUCKET/PREFIX/NAME on S3 and every S3-compatible
// store (MinIO, Ceph, versitygw, GCS's interoperable XML API, R2, ...), through the AWS
// SDK's own S3 client with its usual credential chain (environment, shared files, SSO,
// web identity, instance roles); and file:///DIR/PREFIX/NAME on a file system. A
// Store reads a backup's tarball (archive.Source), and writes one with what Velero
// keeps beside it (velero.PutBackup).
//
// The SDK's S3 client alone keeps the dependencies to what S3 needs: gocloud.dev/blob
// would add GCS's and Azure's SDKs; those stores are reached through Velero's own
// object-store plugins instead (velero.Client.OpenLocation), as Velero reaches them.
package bucket

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/restoregraph/restoregraph/archive"
)

// Schemes are the URL schemes a backup may be named by.
var Schemes = []string{"s3", "file"}

// The options a URL's query may set, named as Velero's BackupStorageLocation names them
// (and as the SDKs do).
var s3Options = map[string]string{
	"region": "region", "s3Url": "endpoint", "endpoint": "endpoint",
	"s3ForcePathStyle": "pathStyle", "use_path_style": "pathStyle", "profile": "profile",
}

// URL names a backup kept as Velero keeps it: its tarball's key in a bucket, and how to
// reach the bucket.
type URL struct {
	// Raw is the URL as given.
	Raw string
	// Key is the tarball's key: PREFIX/backups/NAME/NAME.tar.gz.
	Key string
	// Bucket and S3 are an s3:// URL's bucket and how to reach its store.
	Bucket string
	S3     S3Options
	// Dir is a file:// URL's directory the key is under.
	Dir string
}

// S3Options say how to reach an S3 store; what is not set comes from the SDK's chain.
type S3Options struct {
	Region, Endpoint, Profile string
	PathStyle                 bool
}

// URLError is a URL that names no backup, and why.
type URLError struct {
	URL, Reason string
}

func (e *URLError) Error() string { return fmt.Sprintf("%q: %s", e.URL, e.Reason) }

// IsURL says whether s names a backup by URL rather than as a local file.
func IsURL(s string) bool { return strings.Contains(s, "://") }

// Parse reads a URL that names a backup as Velero keeps it: SCHEME://BUCKET/PREFIX/NAME
// (or .../PREFIX/backups/NAME) is the tarball PREFIX/backups/NAME/NAME.tar.gz, and a
// path ending in .tar.gz is that object. The query sets the store's options as a
// BackupStorageLocation does (region, s3Url, s3ForcePathStyle, profile); endpoint, when
// set, is an S3-compatible store's address, reached with path-style requests. A URL
// that names no backup is a *URLError.
func Parse(raw, endpoint string) (URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return URL{}, &URLError{raw, err.Error()}
	}
	known := false
	for _, s := range Schemes {
		known = known || u.Scheme == s
	}
	switch p := strings.Trim(u.Path, "/"); {
	case !known:
		return URL{}, &URLError{raw, fmt.Sprintf("the scheme %q is not one of %s", u.Scheme, strings.Join(Schemes, ", "))}
	case endpoint != "" && u.Scheme != "s3":
		return URL{}, &URLError{raw, "an S3 endpoint is for s3:// URLs, not " + u.Scheme + "://"}
	case u.Scheme == "file" && u.Host != "":
		return URL{}, &URLError{raw, "a file URL has no host (file:///path/to/NAME)"}
	case u.Scheme != "file" && u.Host == "":
		return URL{}, &URLError{raw, fmt.Sprintf("no bucket (%s://BUCKET/PREFIX/NAME)", u.Scheme)}
	case p == "":
		return URL{}, &URLError{raw, fmt.Sprintf("no backup named (%s://BUCKET/PREFIX/NAME)", u.Scheme)}
	}
	key := strings.Trim(u.Path, "/")
	if !strings.HasSuffix(key, ".tar.gz") {
		dir, name := path.Split(key)
		dir = strings.TrimSuffix(dir, "/")
		if dir == "backups" || strings.HasSuffix(dir, "/backups") {
			dir = strings.TrimSuffix(dir, "backups")
		}
		key = archive.TarballKey(dir, name)
	}
	loc := URL{Key: key, Raw: raw}
	if u.Scheme == "file" {
		loc.Dir = "/"
		return loc, nil
	}
	loc.Bucket = u.Host
	for k, v := range u.Query() {
		opt, ok := s3Options[k]
		if !ok {
			return URL{}, &URLError{raw, fmt.Sprintf("%q is not an option of an s3:// URL (region, s3Url, s3ForcePathStyle, profile)", k)}
		}
		switch opt {
		case "region":
			loc.S3.Region = v[0]
		case "endpoint":
			loc.S3.Endpoint = v[0]
		case "profile":
			loc.S3.Profile = v[0]
		case "pathStyle":
			loc.S3.PathStyle = v[0] == "true"
		}
	}
	if endpoint != "" {
		loc.S3.Endpoint, loc.S3.PathStyle = endpoint, true
	}
	if loc.S3.Endpoint != "" && loc.S3.Region == "" && os.Getenv("AWS_REGION") == "" && os.Getenv("AWS_DEFAULT_REGION") == "" {
		loc.S3.Region = "us-east-1" // S3-compatible stores sign with one, and most take any
	}
	return loc, nil
}

// Name is the backup's name: the tarball's, without .tar.gz.
func (u URL) Name() string { return strings.TrimSuffix(path.Base(u.Key), ".tar.gz") }

// Store is a bucket a URL names: it reads objects from an offset (archive.Source),
// says whether a key is there, and writes an object whole.
type Store interface {
	archive.Source
	Exists(ctx context.Context, key string) (bool, error)
	Put(ctx context.Context, key string, body io.Reader) error
}

// Open returns the store of the URL's bucket. An S3 store is configured from the
// SDK's chain and the URL's options; nothing is sent until it is used.
func (u URL) Open(ctx context.Context) (Store, error) {
	if u.Dir != "" {
		return Dir(u.Dir), nil
	}
	client, err := u.S3.client(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u.Raw, err)
	}
	return &S3{Client: client, Bucket: u.Bucket}, nil
}
