package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/restoregraph/restoregraph/backup"
	"github.com/restoregraph/restoregraph/plugin/velerohost"
)

// keptAsVelero is what `backup -o URL` and `backup --storage-location` write beside the tarball, so that Velero's
// backup sync lists the backup (`velero backup get`) and restores it: velero-backup.json
// (its Backup object), the resource list and the log, as Velero writes them, and the
// manifest, for tools that plan without the tarball.
type keptAsVelero struct {
	name, namespace, location string
	filter                    filterFlags
	started, completed        time.Time
	result                    *backup.Result
	log                       []byte // what the command printed
}

// putter writes objects where a backup goes: a bucket, a directory, or a
// BackupStorageLocation through its object-store plugin.
type putter interface {
	put(ctx context.Context, key string, body io.ReadSeeker, size int64) error
	exists(ctx context.Context, key string) (bool, error)
}

// destination is where `backup` writes a backup kept as Velero keeps them: the
// tarball's key, and the store it goes to.
type destination struct {
	store    putter
	key      string // PREFIX/backups/NAME/NAME.tar.gz
	where    string // for messages: the URL, or the location
	location string // the BackupStorageLocation velero-backup.json names
}

// beside is the key of a file in the backup's directory.
func (d destination) beside(file string) string { return path.Join(path.Dir(d.key), file) }

// free refuses to write over a backup of that name: Velero never overwrites one, and a
// backup written over is one lost.
func (d destination) free(ctx context.Context, name string) error {
	for _, key := range []string{d.beside("velero-backup.json"), d.key} {
		there, err := d.store.exists(ctx, key)
		if err != nil {
			return &exitError{code: exitUnreachable, err: fmt.Errorf("%s: %w", d.where, err)}
		}
		if there {
			return badInput("%w: %s in %s (%s): choose another name", velerohost.ErrBackupExists, name, d.where, key)
		}
	}
	return nil
}

func (loc backupLocation) destination(ctx context.Context, location string) (destination, error) {
	d := destination{key: loc.key, where: loc.url, location: location}
	if loc.dir != "" {
		d.store = dirPutter(loc.dir)
		return d, nil
	}
	client, err := loc.s3.client(ctx)
	if err != nil {
		return d, badInput("-o %s: %v", loc.url, err)
	}
	d.store = bucketPutter{client: client, bucket: loc.bucket}
	return d, nil
}

type dirPutter string

func (d dirPutter) path(key string) string { return filepath.Join(string(d), filepath.FromSlash(key)) }

func (d dirPutter) exists(_ context.Context, key string) (bool, error) {
	_, err := os.Stat(d.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (d dirPutter) put(_ context.Context, key string, body io.ReadSeeker, _ int64) error {
	p := d.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p+".partial", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(p + ".partial")
		return err
	}
	return os.Rename(p+".partial", p)
}

// bucketPutter writes each object with one PUT (S3 takes up to 5 GiB so).
type bucketPutter struct {
	client *s3.Client
	bucket string
}

func (b bucketPutter) put(ctx context.Context, key string, body io.ReadSeeker, size int64) error {
	_, err := b.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &b.bucket, Key: &key, Body: body, ContentLength: aws.Int64(size)})
	return err
}

func (b bucketPutter) exists(ctx context.Context, key string) (bool, error) {
	_, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: &key})
	var nf *s3types.NotFound
	var resp *smithyhttp.ResponseError
	if errors.As(err, &nf) || errors.As(err, &resp) && resp.HTTPStatusCode() == 404 {
		return false, nil
	}
	return err == nil, err
}

// storePutter writes through a BackupStorageLocation's own object-store plugin.
type storePutter struct{ store *velerohost.ObjectStore }

func (s storePutter) put(ctx context.Context, key string, body io.ReadSeeker, _ int64) error {
	return s.store.Put(ctx, key, body)
}

func (s storePutter) exists(ctx context.Context, key string) (bool, error) {
	return s.store.Exists(ctx, key)
}

// putBackup writes the tarball at local and its records where d says, velero-backup.json
// last: Velero's sync takes a backup once that is there, and by then all the rest is.
func putBackup(ctx context.Context, d destination, local string, k keptAsVelero) error {
	files, err := velerohost.BackupRecord{Name: k.name, Manifest: k.result.Manifest, Object: k.backupObject(), Log: k.log}.Files()
	if err != nil {
		return err
	}
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := d.store.put(ctx, d.key, f, st.Size()); err != nil {
		return &exitError{code: exitUnreachable, err: fmt.Errorf("writing %s to %s: %w", d.key, d.where, err)}
	}
	for _, r := range files {
		if err := d.store.put(ctx, d.beside(r.Name), bytes.NewReader(r.Data), int64(len(r.Data))); err != nil {
			return &exitError{code: exitUnreachable, err: fmt.Errorf("writing %s to %s: %w", d.beside(r.Name), d.where, err)}
		}
	}
	return nil
}

// backupObject is the Backup Velero's sync makes of the backup: its name, location,
// what it selected, the tarball's format, and phase Completed, or PartiallyFailed when
// a list failed.
func (k keptAsVelero) backupObject() map[string]any {
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	const ttl = 30 * 24 * time.Hour // Velero's default
	spec := k.filter.veleroSpec()
	spec["storageLocation"], spec["ttl"] = k.location, ttl.String()
	if _, ok := spec["includedNamespaces"]; !ok {
		spec["includedNamespaces"] = []string{"*"}
	}
	phase := "Completed"
	if len(k.result.Incomplete) > 0 {
		phase = "PartiallyFailed"
	}
	return map[string]any{
		"apiVersion": "velero.io/v1", "kind": "Backup",
		"metadata": map[string]any{"name": k.name, "namespace": k.namespace,
			"labels": map[string]any{"velero.io/storage-location": k.location}},
		"spec": spec,
		"status": map[string]any{"version": 1, "formatVersion": "1.1.0", "phase": phase,
			"startTimestamp": ts(k.started), "completionTimestamp": ts(k.completed), "expiration": ts(k.completed.Add(ttl)),
			"progress": map[string]any{"totalItems": k.result.Objects, "itemsBackedUp": k.result.Objects},
			"errors":   len(k.result.Incomplete), "warnings": len(k.result.Warnings)},
	}
}
