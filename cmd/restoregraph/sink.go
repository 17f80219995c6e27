package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/restoregraph/restoregraph/backup"
	"github.com/restoregraph/restoregraph/manifest"
)

// keptAsVelero is what `backup -o URL` writes beside the tarball, so that Velero's
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

// putter writes objects where a URL names them: a bucket or a directory.
type putter interface {
	put(ctx context.Context, key string, body io.ReadSeeker, size int64) error
}

func (loc backupLocation) putter(ctx context.Context) (putter, error) {
	if loc.dir != "" {
		return dirPutter(loc.dir), nil
	}
	client, err := loc.s3.client(ctx)
	if err != nil {
		return nil, badInput("-o %s: %v", loc.url, err)
	}
	return bucketPutter{client: client, bucket: loc.bucket}, nil
}

// beside is the URL of the object file beside the tarball loc names.
func (loc backupLocation) beside(file string) string {
	key := path.Join(path.Dir(loc.key), file)
	if loc.dir != "" {
		return "file://" + path.Join(filepath.ToSlash(loc.dir), key)
	}
	return "s3://" + loc.bucket + "/" + key
}

type dirPutter string

func (d dirPutter) put(_ context.Context, key string, body io.ReadSeeker, _ int64) error {
	p := filepath.Join(string(d), filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.Create(p + ".partial")
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

// putBackup writes the tarball at local and its records under the key loc names,
// velero-backup.json last: Velero's sync takes a backup once that is there, and by then
// all the rest is.
func putBackup(ctx context.Context, loc backupLocation, local string, k keptAsVelero) error {
	var m bytes.Buffer
	if err := manifest.EncodeGzip(&m, k.result.Manifest); err != nil {
		return fmt.Errorf("the manifest: %w", err)
	}
	list, err := gzipJSON(resourceList(k.result.Manifest))
	if err != nil {
		return fmt.Errorf("the resource list: %w", err)
	}
	logs, err := gzipBytes(k.log)
	if err != nil {
		return fmt.Errorf("the log: %w", err)
	}
	backupJSON, err := json.Marshal(k.backupObject())
	if err != nil {
		return fmt.Errorf("velero-backup.json: %w", err)
	}
	p, err := loc.putter(ctx)
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
	if err := p.put(ctx, loc.key, f, st.Size()); err != nil {
		return &exitError{code: exitUnreachable, err: fmt.Errorf("writing %s: %w", loc.url, err)}
	}
	for _, r := range []struct {
		name string
		data []byte
	}{
		{k.name + "-manifest.json.gz", m.Bytes()},
		{k.name + "-resource-list.json.gz", list},
		{k.name + "-logs.gz", logs},
		{"velero-backup.json", backupJSON},
	} {
		key := path.Join(path.Dir(loc.key), r.name)
		if err := p.put(ctx, key, bytes.NewReader(r.data), int64(len(r.data))); err != nil {
			return &exitError{code: exitUnreachable, err: fmt.Errorf("writing %s beside %s: %w", r.name, loc.url, err)}
		}
	}
	return nil
}

// resourceList is Velero's NAME-resource-list.json.gz: each group/version/Kind's
// objects, namespace/name or name.
func resourceList(m *manifest.Manifest) map[string][]string {
	out := map[string][]string{}
	for _, it := range m.Items() {
		gvk := it.Version + "/" + it.Kind
		if it.Group != "" {
			gvk = it.Group + "/" + gvk
		}
		name := it.Name
		if it.Namespace != "" {
			name = it.Namespace + "/" + name
		}
		out[gvk] = append(out[gvk], name)
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}

// backupObject is the Backup Velero's sync makes of the backup: its name, location,
// what it selected, the tarball's format, and phase Completed, or PartiallyFailed when
// a list failed.
func (k keptAsVelero) backupObject() map[string]any {
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	const ttl = 30 * 24 * time.Hour // Velero's default
	spec := map[string]any{"storageLocation": k.location, "ttl": ttl.String(),
		"includedNamespaces": []string{"*"}}
	if len(k.filter.includeNamespaces) > 0 {
		spec["includedNamespaces"] = k.filter.includeNamespaces
	}
	for key, v := range map[string][]string{"excludedNamespaces": k.filter.excludeNamespaces,
		"includedResources": k.filter.includeResources, "excludedResources": k.filter.excludeResources} {
		if len(v) > 0 {
			spec[key] = v
		}
	}
	if v := k.filter.includeClusterResources.value; v != nil {
		spec["includeClusterResources"] = *v
	}
	if k.filter.selector != "" {
		if sel, err := metav1.ParseToLabelSelector(k.filter.selector); err == nil {
			spec["labelSelector"] = sel
		}
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

func gzipJSON(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return gzipBytes(data)
}

func gzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
