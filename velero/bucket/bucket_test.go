package bucket

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A URL names a backup as Velero keeps it: the tarball's key under the prefix, and how
// to reach the store, from the query as a BackupStorageLocation's config says it.
func TestParse(t *testing.T) {
	for raw, want := range map[string]URL{
		"s3://bucket/velero/nightly":              {Bucket: "bucket", Key: "velero/backups/nightly/nightly.tar.gz"},
		"s3://bucket/velero/backups/nightly/":     {Bucket: "bucket", Key: "velero/backups/nightly/nightly.tar.gz"},
		"s3://bucket/nightly":                     {Bucket: "bucket", Key: "backups/nightly/nightly.tar.gz"},
		"s3://bucket/backups/nightly":             {Bucket: "bucket", Key: "backups/nightly/nightly.tar.gz"},
		"s3://bucket/mybackups/nightly":           {Bucket: "bucket", Key: "mybackups/backups/nightly/nightly.tar.gz"},
		"s3://bucket/a/b.tar.gz?region=eu-west-1": {Bucket: "bucket", S3: S3Options{Region: "eu-west-1"}, Key: "a/b.tar.gz"},
		"s3://bucket/n?s3Url=http://minio:9000&s3ForcePathStyle=true&region=minio": {Bucket: "bucket",
			S3: S3Options{Endpoint: "http://minio:9000", PathStyle: true, Region: "minio"}, Key: "backups/n/n.tar.gz"},
		"file:///srv/velero/backups/nightly": {Dir: "/", Key: "srv/velero/backups/nightly/nightly.tar.gz"},
	} {
		got, err := Parse(raw, "")
		require.NoError(t, err, raw)
		want.Raw = raw
		assert.Equal(t, want, got, raw)
	}

	got, err := Parse("s3://bucket/velero/nightly", "http://127.0.0.1:7070")
	require.NoError(t, err)
	assert.Equal(t, S3Options{Endpoint: "http://127.0.0.1:7070", PathStyle: true, Region: "us-east-1"}, got.S3)
	assert.Equal(t, "nightly", got.Name())

	for raw, endpoint := range map[string]string{
		"ftp://bucket/nightly":    "",
		"s3:///nightly":           "",
		"s3://bucket":             "",
		"s3://bucket/":            "",
		"file://host/srv/nightly": "",
		"gs://bucket/nightly":     "",
		"azblob://bucket/nightly": "",
		"s3://bucket/n?bogus=1":   "",
		"file:///srv/n":           "http://127.0.0.1:7070",
		"s3://bucket/%zz/nightly": "",
	} {
		_, err := Parse(raw, endpoint)
		var ue *URLError
		require.True(t, errors.As(err, &ue), "%s: %v", raw, err)
		assert.Equal(t, raw, ue.URL)
	}
}
