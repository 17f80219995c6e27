package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// A Source holds backups where they are kept: object storage (S3, GCS, Azure Blob, any
// S3-compatible store) or a directory, in Velero's layout — backup NAME is
// backups/NAME/NAME.tar.gz with its records beside it, under the location's prefix.
// Objects are named by slash-separated keys.
type Source interface {
	// Open reads the object at key from byte offset on. A key that does not exist is an
	// error that wraps fs.ErrNotExist, and one the caller may not read wraps
	// fs.ErrPermission: Open retries neither. Any other error, from Open or from the
	// reader, is taken as passing: the read is resumed at the byte it stopped at.
	Open(ctx context.Context, key string, offset int64) (io.ReadCloser, error)
}

// Sized is what a reader a Source returns may also be: Size is the whole object's
// length, so that a connection that ends early without an error is told from the end.
type Sized interface {
	Size() int64
}

// TarballKey is where Velero keeps backup name's tarball, under a location's prefix
// ("" for none).
func TarballKey(prefix, name string) string {
	return path.Join(prefix, "backups", name, name+".tar.gz")
}

// SourceError says that an object of a Source could not be read: where, from which
// byte, after how many attempts, and why. It wraps fs.ErrNotExist for a missing object.
type SourceError struct {
	Key      string
	Offset   int64
	Attempts int
	Err      error
}

func (e *SourceError) Error() string {
	if e.Attempts > 1 {
		return fmt.Sprintf("reading %s at byte %d (%d attempts): %v", e.Key, e.Offset, e.Attempts, e.Err)
	}
	if e.Offset > 0 {
		return fmt.Sprintf("reading %s at byte %d: %v", e.Key, e.Offset, e.Err)
	}
	return fmt.Sprintf("reading %s: %v", e.Key, e.Err)
}
func (e *SourceError) Unwrap() error { return e.Err }

// DefaultResume is how a broken read is resumed when Options.Resume is zero: six
// attempts in a row that read nothing, from a quarter of a second apart, doubling, at
// most eight seconds.
var DefaultResume = wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 6, Cap: 8 * time.Second}

// Open reads the backup tarball at key in src, streamed: it is never held whole in
// memory or on disk beyond what Read keeps (Options.MemoryBytes, then the spill file).
// A read that breaks is resumed with a ranged read from the byte it stopped at
// (Options.Resume says how often). As with ReadFile, a backup that carries its
// manifest returns once the manifest is read and reads bodies as they are asked for;
// Close releases the stream. ctx bounds every read, including the later ones.
func Open(ctx context.Context, src Source, key string, opts Options) (*Backup, error) {
	r := &resumable{ctx: ctx, src: src, key: key, policy: opts.Resume}
	r.size.Store(-1)
	if r.policy.Steps <= 0 {
		r.policy = DefaultResume
	}
	r.backoff = r.policy
	if err := r.open(); err != nil {
		return nil, err
	}
	b, err := read(r, r, opts)
	if err != nil {
		r.Close()
		return nil, err
	}
	b.src = r
	if !b.Pending() {
		r.Close()
	}
	return b, nil
}

// SourceStats says what reading a backup from its Source has taken so far.
type SourceStats struct {
	Bytes   int64 // read from the source (compressed, as stored)
	Size    int64 // the tarball's length, when the source says; else -1
	Resumed int   // ranged reads after a break
}

// SourceStats says what reading the backup from its Source has taken so far; zero for
// a backup that Open did not read.
func (b *Backup) SourceStats() SourceStats {
	if b.src == nil {
		return SourceStats{}
	}
	return SourceStats{Bytes: b.src.read.Load(), Size: b.src.size.Load(), Resumed: int(b.src.resumed.Load())}
}

// resumable reads one object of a Source to its end, opening it again at the byte it
// stopped at when a read breaks.
type resumable struct {
	ctx     context.Context
	src     Source
	key     string
	policy  wait.Backoff // how often to try: Steps attempts in a row that read nothing
	backoff wait.Backoff // the next waits, from policy again after each byte read

	rc     io.ReadCloser
	off    int64
	failed int // attempts in a row that read nothing
	// What SourceStats shows, while the inflating goroutine reads.
	read    atomic.Int64
	size    atomic.Int64 // -1 when the source does not say
	resumed atomic.Int64
}

func (r *resumable) open() error {
	for {
		rc, err := r.src.Open(r.ctx, r.key, r.off)
		if err == nil {
			r.rc = rc
			r.size.Store(-1)
			if s, ok := rc.(Sized); ok {
				r.size.Store(s.Size())
			}
			return nil
		}
		if err := r.fail(err); err != nil {
			return err
		}
	}
}

// fail counts a failed attempt and waits before the next; it returns the error to give
// up with, or nil to try again.
func (r *resumable) fail(err error) error {
	r.failed++
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || r.ctx.Err() != nil || r.failed >= r.policy.Steps {
		if cerr := r.ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w (after %v)", cerr, err)
		}
		return &SourceError{Key: r.key, Offset: r.off, Attempts: r.failed, Err: err}
	}
	t := time.NewTimer(r.backoff.Step())
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-r.ctx.Done():
		return &SourceError{Key: r.key, Offset: r.off, Attempts: r.failed, Err: fmt.Errorf("%w (after %v)", r.ctx.Err(), err)}
	}
}

func (r *resumable) Read(p []byte) (int, error) {
	for {
		if r.rc == nil {
			r.resumed.Add(1)
			if err := r.open(); err != nil {
				return 0, err
			}
		}
		n, err := r.rc.Read(p)
		r.off += int64(n)
		r.read.Store(r.off)
		if n > 0 {
			r.failed, r.backoff = 0, r.policy
		}
		if size := r.size.Load(); err == io.EOF && size >= 0 && r.off < size {
			err = fmt.Errorf("%w: the stream ended at byte %d of %d", io.ErrUnexpectedEOF, r.off, size)
		}
		if err == nil || err == io.EOF {
			return n, err
		}
		r.rc.Close()
		r.rc = nil
		if n > 0 {
			return n, nil // what was read is given now; the next call opens again from r.off
		}
		if ferr := r.fail(err); ferr != nil {
			return 0, ferr
		}
	}
}

func (r *resumable) Close() error {
	if r.rc == nil {
		return nil
	}
	err := r.rc.Close()
	r.rc = nil
	return err
}

// dirSource is a Source over a directory.
type dirSource string

// DirSource is a Source over a local directory, keys being paths under it: a bucket
// copied to disk, or a file:// location.
func DirSource(dir string) Source { return dirSource(dir) }

func (d dirSource) Open(_ context.Context, key string, offset int64) (io.ReadCloser, error) {
	if !fs.ValidPath(key) || strings.Contains(key, `\`) {
		return nil, fmt.Errorf("%q is not a key: %w", key, fs.ErrNotExist)
	}
	f, err := os.Open(filepath.Join(string(d), filepath.FromSlash(key)))
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return sizedFile{f, st.Size()}, nil
}

type sizedFile struct {
	*os.File
	size int64
}

func (f sizedFile) Size() int64 { return f.size }
