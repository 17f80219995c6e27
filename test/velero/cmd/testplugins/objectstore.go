package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/restoregraph/restoregraph/test/velero/internal/credentials"
)

// dirStore is an object store (Velero's ObjectStore interface) over a directory: bucket
// B's key K is the file ROOT/B/K, ROOT being the location's config "root". A location
// whose config sets "breakAt" has each GetObject stream fail after that many bytes, the
// first time only (once per marker file $ROOT/.broke), as a connection that drops. When
// ROOT/.credentials exists, Init requires the location's credentialsFile to hold the
// same bytes, as a store checks its credentials.
type dirStore struct {
	root    string
	breakAt int64
}

func newDirStore(logrus.FieldLogger) (any, error) { return &dirStore{}, nil }

func (s *dirStore) Init(config map[string]string) error {
	s.root = config["root"]
	if s.root == "" {
		return errors.New("config: root is required")
	}
	if v := config["breakAt"]; v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("config: breakAt: %w", err)
		}
		s.breakAt = n
	}
	return credentials.Check(s.root, config)
}

func (s *dirStore) path(bucket, key string) string {
	return filepath.Join(s.root, bucket, filepath.FromSlash(key))
}

func (s *dirStore) PutObject(bucket, key string, body io.Reader) error {
	p := s.path(bucket, key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

func (s *dirStore) ObjectExists(bucket, key string) (bool, error) {
	_, err := os.Stat(s.path(bucket, key))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (s *dirStore) GetObject(bucket, key string) (io.ReadCloser, error) {
	f, err := os.Open(s.path(bucket, key))
	if err != nil {
		return nil, err
	}
	marker := filepath.Join(s.root, ".broke")
	if _, err := os.Stat(marker); s.breakAt > 0 && err != nil {
		os.WriteFile(marker, nil, 0o644)
		return &breaking{ReadCloser: f, left: s.breakAt}, nil
	}
	return f, nil
}

// breaking fails its reads once left bytes are read.
type breaking struct {
	io.ReadCloser
	left int64
}

func (b *breaking) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errors.New("connection reset by peer")
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

func (s *dirStore) ListCommonPrefixes(bucket, prefix, delimiter string) ([]string, error) {
	return nil, errors.New("not implemented")
}

// ListObjects returns every key of the bucket that starts with prefix.
func (s *dirStore) ListObjects(bucket, prefix string) ([]string, error) {
	root := filepath.Join(s.root, bucket)
	var keys []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if key := filepath.ToSlash(rel); strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return keys, err
}

func (s *dirStore) DeleteObject(bucket, key string) error { return os.Remove(s.path(bucket, key)) }

func (s *dirStore) CreateSignedURL(bucket, key string, ttl time.Duration) (string, error) {
	return "", errors.New("not implemented")
}
