package bucket

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/restoregraph/restoregraph/archive"
)

// Dir is a directory seen as a bucket: a key is a path under it.
type Dir string

var _ Store = Dir("")

func (d Dir) path(key string) string { return filepath.Join(string(d), filepath.FromSlash(key)) }

// Open reads key from offset on.
func (d Dir) Open(ctx context.Context, key string, offset int64) (io.ReadCloser, error) {
	return archive.DirSource(string(d)).Open(ctx, key, offset)
}

// Exists says whether the directory holds key.
func (d Dir) Exists(_ context.Context, key string) (bool, error) {
	_, err := os.Stat(d.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Put writes body to key, to a file beside it that is renamed once whole, so that a
// key holds a whole object or none; only this user reads it (a backup holds Secrets).
func (d Dir) Put(_ context.Context, key string, body io.Reader) error {
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
