package archive

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"
)

// memSource is a bucket in memory whose connections break: each Open serves at most
// cut bytes (0: all) and then fails, or ends early without an error when quiet.
type memSource struct {
	objects map[string][]byte
	cut     int
	quiet   bool
	down    int // the next Opens that fail
	mu      sync.Mutex
	offsets []int64 // where each Open started
}

var errReset = errors.New("connection reset by peer")

func (s *memSource) Open(_ context.Context, key string, offset int64) (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offsets = append(s.offsets, offset)
	if s.down > 0 {
		s.down--
		return nil, errReset
	}
	data, ok := s.objects[key]
	if !ok {
		return nil, fmt.Errorf("%s: %w", key, fs.ErrNotExist)
	}
	rest := data[offset:]
	r := &brokenReader{r: bytes.NewReader(rest), quiet: s.quiet, size: int64(len(data))}
	if s.cut > 0 && len(rest) > s.cut {
		r.r = bytes.NewReader(rest[:s.cut])
		r.broken = true
	}
	return r, nil
}

type brokenReader struct {
	r             *bytes.Reader
	broken, quiet bool
	size          int64
}

func (r *brokenReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err == io.EOF && r.broken && !r.quiet {
		err = errReset
	}
	return n, err
}
func (r *brokenReader) Close() error { return nil }
func (r *brokenReader) Size() int64  { return r.size }

var fastResume = wait.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 4}

// sameBodies asserts that got holds every body of want, byte for byte.
func sameBodies(t *testing.T, want, got *Backup) {
	t.Helper()
	require.Equal(t, want.Manifest().Len(), got.Manifest().Len())
	for _, it := range want.Manifest().Items() {
		w, err := want.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
		require.NoError(t, err)
		g, err := got.Body(it.GroupResource(), it.Version, it.Namespace, it.Name)
		require.NoError(t, err, "%s", it)
		require.Equal(t, w, g, "%s", it)
	}
}

// A download that breaks is resumed from the byte it stopped at, not restarted, and
// the backup read is the one stored.
func TestOpenResumesABrokenDownload(t *testing.T) {
	tarball := []byte(must(os.ReadFile(withManifest(t))))
	want, err := Read(context.Background(), bytes.NewReader(tarball), Options{})
	require.NoError(t, err)
	for _, quiet := range []bool{false, true} {
		t.Run(fmt.Sprintf("quiet=%v", quiet), func(t *testing.T) {
			src := &memSource{objects: map[string][]byte{"backups/b/b.tar.gz": tarball}, cut: 100, quiet: quiet}
			b, err := Open(context.Background(), src, TarballKey("", "b"), Options{Resume: fastResume})
			require.NoError(t, err)
			defer b.Close()
			require.NoError(t, b.ReadRest())
			sameBodies(t, want, b)

			breaks := (len(tarball) - 1) / 100
			st := b.SourceStats()
			assert.Equal(t, SourceStats{Bytes: int64(len(tarball)), Size: int64(len(tarball)), Resumed: breaks}, st)
			require.Len(t, src.offsets, breaks+1)
			for i, off := range src.offsets {
				assert.Equal(t, int64(i*100), off, "each ranged read starts where the last one stopped")
			}
		})
	}
}

// A source that is away for a while is waited for; one that stays away is an error
// that names the object, the byte and the attempts; a missing object is not retried.
func TestOpenGivesUp(t *testing.T) {
	tarball := []byte(must(os.ReadFile(withManifest(t))))
	objects := map[string][]byte{"velero/backups/b/b.tar.gz": tarball}
	key := TarballKey("velero", "b")

	src := &memSource{objects: objects, down: 3}
	b, err := Open(context.Background(), src, key, Options{Resume: fastResume})
	require.NoError(t, err, "three failures, then the fourth attempt reads")
	require.NoError(t, b.ReadRest())
	b.Close()

	src = &memSource{objects: objects, down: 4}
	_, err = Open(context.Background(), src, key, Options{Resume: fastResume})
	var se *SourceError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, SourceError{Key: key, Offset: 0, Attempts: 4, Err: errReset}, *se)
	assert.EqualError(t, err, "reading velero/backups/b/b.tar.gz at byte 0 (4 attempts): connection reset by peer")

	_, err = Open(context.Background(), &memSource{objects: objects}, TarballKey("velero", "nightly"), Options{Resume: fastResume})
	require.ErrorAs(t, err, &se)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Equal(t, 1, se.Attempts)

	// Broken after the manifest, for good: the body asked for names where.
	big, _ := carrying(t)
	const cut = 1 << 20
	src = &memSource{objects: map[string][]byte{key: big}, cut: cut}
	b, err = Open(context.Background(), src, key, Options{Resume: fastResume})
	require.NoError(t, err)
	defer b.Close()
	require.True(t, b.Pending())
	src.mu.Lock()
	src.down = 100
	src.mu.Unlock()
	err = b.ReadRest()
	require.ErrorAs(t, err, &se)
	assert.Equal(t, SourceError{Key: key, Offset: cut, Attempts: 4, Err: errReset}, *se)

	// A cancelled context ends the waiting.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Open(ctx, &memSource{objects: objects, down: 1}, key, Options{Resume: wait.Backoff{Duration: time.Hour, Steps: 3}})
	assert.ErrorIs(t, err, context.Canceled)
}

var carried struct {
	once    sync.Once
	tarball []byte
	read    *Backup
}

// carrying writes 1,500 ConfigMaps of 2 KiB that do not compress much, with the
// manifest first, as backup does; it returns the tarball and the backup read from it.
func carrying(t *testing.T) ([]byte, *Backup) {
	t.Helper()
	carried.once.Do(func() { carried.tarball, carried.read = writeCarrying(t, 1500) })
	require.NotNil(t, carried.read)
	return carried.tarball, carried.read
}

func writeCarrying(t *testing.T, n int) ([]byte, *Backup) {
	var plain bytes.Buffer
	w, err := NewWriter(&plain, Format11)
	require.NoError(t, err)
	data := make([]byte, 1536)
	for i := range n {
		cm := object("v1", "ConfigMap", "shop", fmt.Sprintf("cm-%d", i), fmt.Sprintf("cm-uid-%d", i))
		rand.Read(data)
		cm.Object["data"] = map[string]any{"blob": base64.StdEncoding.EncodeToString(data)}
		require.NoError(t, w.Add(cm, "configmaps", true))
	}
	require.NoError(t, w.Close())
	read, err := Read(context.Background(), bytes.NewReader(plain.Bytes()), Options{})
	require.NoError(t, err)
	var carried bytes.Buffer
	w, err = NewWriter(&carried, Format11)
	require.NoError(t, err)
	require.NoError(t, w.AddManifest(read.Manifest()))
	for _, it := range read.Manifest().Items() {
		obj, err := read.Object(it, it.Version)
		require.NoError(t, err)
		require.NoError(t, w.Add(obj, it.Resource, true))
	}
	require.NoError(t, w.Close())
	return carried.Bytes(), read
}

// A backup that carries its manifest is planned from the first bytes of the stream.
func TestOpenReadsTheManifestFirst(t *testing.T) {
	tarball, read := carrying(t)
	src := &memSource{objects: map[string][]byte{"b.tar.gz": tarball}}
	b, err := Open(context.Background(), src, "b.tar.gz", Options{})
	require.NoError(t, err)
	defer b.Close()
	assert.True(t, b.Pending())
	assert.Equal(t, 1500, b.Manifest().Len())
	st := b.SourceStats()
	// Read ahead of the parse are up to 9 blocks of 256 KiB inflated, about a quarter
	// of this tarball: on a busy machine the inflate fills them before the manifest is
	// parsed (655,360 bytes read of 2.4 MB), on an idle one it does not (131,072).
	assert.Less(t, st.Bytes, st.Size*3/10, "the manifest and what is read ahead, of %d bytes", st.Size)
	t.Logf("planned from %d of %d bytes", st.Bytes, st.Size)

	require.NoError(t, b.ReadRest())
	assert.Equal(t, st.Size, b.SourceStats().Bytes)
	sameBodies(t, read, b)
}

// DirSource reads a bucket copied to disk, from an offset, and refuses keys that
// would leave it.
func TestDirSource(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "backups", "b"), 0o755))
	tarball := []byte(must(os.ReadFile(withManifest(t))))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "backups", "b", "b.tar.gz"), tarball, 0o644))
	b, err := Open(context.Background(), DirSource(dir), TarballKey("", "b"), Options{})
	require.NoError(t, err)
	require.NoError(t, b.ReadRest())
	assert.Equal(t, int64(len(tarball)), b.SourceStats().Size)
	b.Close()

	rc, err := DirSource(dir).Open(context.Background(), "backups/b/b.tar.gz", 10)
	require.NoError(t, err)
	rest, err := io.ReadAll(rc)
	rc.Close()
	require.NoError(t, err)
	assert.Equal(t, tarball[10:], rest)
	for _, key := range []string{"../b.tar.gz", "/etc/passwd", "backups/../../x"} {
		_, err := DirSource(dir).Open(context.Background(), key, 0)
		assert.ErrorIs(t, err, fs.ErrNotExist, key)
	}
}
