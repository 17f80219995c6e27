package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/restoregraph/restoregraph/internal/scoped"
	"github.com/restoregraph/restoregraph/internal/strslab"
	"github.com/restoregraph/restoregraph/manifest"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Options bound what Read accepts and say where object bodies are kept.
// The zero value gives the defaults.
type Options struct {
	MaxEntryBytes int64 // one entry, uncompressed; default 32 MiB (etcd's limit is 1.5 MiB)
	// MaxManifestBytes bounds the carried manifest's entry (ManifestPath), which grows
	// with the objects (about 35 MB, gzip'd, for a million) and is read whole; default
	// 1 GiB.
	MaxManifestBytes int64
	MaxTotalBytes    int64 // all entries, uncompressed; default 16 GiB
	MaxEntries       int64 // default 10 million
	// MemoryBytes bounds the object bodies kept in memory; the rest go to one spill
	// file, which Close removes, and once some have, all do when the tarball ends.
	// Default 64 MiB.
	MemoryBytes int64
	// SpillDir is where the spill file is made; default os.TempDir(). It must exist;
	// Read writes nowhere else.
	SpillDir string
	// Resume says how Open resumes a read from a Source that breaks: Steps attempts in
	// a row that read nothing, waiting as the backoff says between them. Default
	// DefaultResume.
	Resume wait.Backoff
}

func (o Options) withDefaults() Options {
	if o.MaxEntryBytes <= 0 {
		o.MaxEntryBytes = 32 << 20
	}
	if o.MaxManifestBytes <= 0 {
		o.MaxManifestBytes = 1 << 30
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = 16 << 30
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = 10_000_000
	}
	if o.MemoryBytes <= 0 {
		o.MemoryBytes = 64 << 20
	}
	return o
}

// entryLimit returns the most bytes the entry name may hold, and what the limit is.
func (o Options) entryLimit(name string) (int64, Limit) {
	if name == ManifestPath {
		return o.MaxManifestBytes, LimitManifestSize
	}
	return o.MaxEntryBytes, LimitEntrySize
}

// Resource says which versions of one group-resource the backup holds, highest
// Kubernetes priority first, and which one the source cluster preferred.
type Resource = manifest.Resource

// Backup is a read backup: its manifest, its versions and its object bodies. Its
// methods are safe for concurrent use.
type Backup struct {
	format   string
	manifest *manifest.Manifest

	mu       sync.RWMutex
	warnings []string
	bodies   *scoped.Map[bodyDir, bodyRef] // by directory and name
	store    bodyStore
	// rest are the entries not read yet: a backup that carries its manifest reads its
	// bodies only when they are asked for. nil once every entry has been read.
	rest    *entries
	restErr error            // why the rest could not be read
	strs    *strslab.Strings // the strings of the body index
	src     *resumable       // the stream, when Open read the backup from a Source
}

type bodyKey struct {
	gr                       schema.GroupResource
	version, namespace, name string
}

// bodyDir is the directory of a body: its key but the name.
type bodyDir struct {
	gr                 schema.GroupResource
	version, namespace string
}

func (k bodyKey) dir() bodyDir { return bodyDir{k.gr, k.version, k.namespace} }

// ReadFile reads the backup tarball at path. When the backup carries its manifest
// before the bodies (as restoregraph's backup writes it), ReadFile returns once it has
// the manifest, and reads bodies from the file as they are asked for, in the file's
// order; Close releases the file. Otherwise it reads every entry, as Read does. ctx
// bounds every read of the file, the later ones included: once it is done, no more of
// the file is read, and a body that needs more of it fails with ctx's error.
func ReadFile(ctx context.Context, path string, opts Options) (*Backup, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	b, err := read(ctxReader{ctx, f}, f, opts)
	if err != nil || !b.Pending() {
		f.Close()
	}
	return b, err
}

// Read reads a backup tarball, gzip-compressed (as Velero writes it) or not, to its
// end, or until ctx is done. Close releases the spill file, if one was needed.
func Read(ctx context.Context, r io.Reader, opts Options) (*Backup, error) {
	return read(ctxReader{ctx, r}, nil, opts)
}

// ctxReader reads r until ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// read reads r. With closer, the bodies wait when a manifest leads, and the entries
// left to read close it when they end; without, r is read to its end.
func read(r io.Reader, closer io.Closer, opts Options) (*Backup, error) {
	opts = opts.withDefaults()
	b := &Backup{bodies: scoped.New[bodyDir, bodyRef](0), strs: strslab.New(1 << 16), store: bodyStore{dir: opts.SpillDir, budget: int(opts.MemoryBytes)}}
	if opts.SpillDir != "" {
		if _, err := os.Stat(opts.SpillDir); err != nil {
			return nil, fmt.Errorf("archive: spill directory: %w", err)
		}
	}
	b.store.reuse = true
	err := b.read(r, opts, closer)
	b.store.endReuse() // from now on, callers hold bodies
	if err == nil && b.rest == nil {
		err = b.settle()
	}
	if err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Close releases the tarball (when bodies were still to be read from it) and removes
// the spill file, if any.
func (b *Backup) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rest != nil {
		b.rest.close()
		b.rest = nil
		b.restErr = errors.New("the backup was closed")
	}
	return b.store.close()
}

// Format returns the backup's format version: Format10 or Format11.
func (b *Backup) Format() string { return b.format }

// Manifest returns the backup's manifest; each object appears once, at the source's
// preferred version.
func (b *Backup) Manifest() *manifest.Manifest { return b.manifest }

// Warnings returns what Read skipped or assumed, in the order met. For a backup whose
// bodies are read as they are asked for, ReadRest reads them all first.
func (b *Backup) Warnings() []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return slices.Clone(b.warnings)
}

// Pending reports whether entries of the tarball are still unread: bodies that will be
// read when first asked for.
func (b *Backup) Pending() bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.rest != nil
}

// ReadRest reads the bodies not read yet, to the end of the tarball, and returns what
// stopped it, if anything did.
func (b *Backup) ReadRest() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.readRest(nil)
}

// Resources returns every group-resource in the backup, ordered by group then
// resource. The manifest holds them; this is Manifest().Resources().
func (b *Backup) Resources() []Resource { return b.manifest.Resources() }

// Resource returns the versions held for gr.
func (b *Backup) Resource(gr schema.GroupResource) (Resource, bool) { return b.manifest.Resource(gr) }

// Dir returns the directory below resources/<gr>/ that holds gr at version: "v1",
// "v1-preferredversion", or "" for a format 1.0 backup, where there are none.
func (b *Backup) Dir(gr schema.GroupResource, version string) string {
	if b.format == Format10 {
		return ""
	}
	if r, ok := b.manifest.Resource(gr); ok && r.Preferred == version {
		return version + preferredSuffix
	}
	return version
}

// Body returns the JSON of the object gr namespace/name at version. The caller does not
// change it.
func (b *Backup) Body(gr schema.GroupResource, version, namespace, name string) ([]byte, error) {
	return b.body(gr, version, namespace, name, nil, false)
}

// AppendBody appends the JSON of the object gr namespace/name at version to dst: a
// caller that reads many bodies one at a time, as a restore's workers do, reads them
// into buffers of its own rather than each into a new one.
func (b *Backup) AppendBody(dst []byte, gr schema.GroupResource, version, namespace, name string) ([]byte, error) {
	return b.body(gr, version, namespace, name, dst, true)
}

// body returns the body of gr namespace/name at version: appended to dst when
// appending, else as Body does.
func (b *Backup) body(gr schema.GroupResource, version, namespace, name string, dst []byte, appending bool) ([]byte, error) {
	get := func(ref bodyRef) ([]byte, error) {
		if appending {
			return b.store.appendBody(dst, ref)
		}
		return b.store.get(ref)
	}
	key := bodyKey{gr, version, namespace, name}
	b.mu.RLock()
	ref, ok := b.bodies.Get(key.dir(), key.name)
	pending := b.rest != nil
	if ok {
		defer b.mu.RUnlock()
		return get(ref)
	}
	b.mu.RUnlock()
	if pending {
		b.mu.Lock()
		defer b.mu.Unlock()
		if err := b.readRest(&key); err != nil {
			return nil, fmt.Errorf("%s %s/%s at version %s: the backup could not be read to it: %w", gr, namespace, name, version, err)
		}
		if ref, ok = b.bodies.Get(key.dir(), key.name); ok {
			return get(ref)
		}
	}
	return nil, fmt.Errorf("%s %s/%s at version %s: %w", gr, namespace, name, version, ErrNotFound)
}

// Object returns item's object at version, decoded.
func (b *Backup) Object(item *manifest.Item, version string) (*unstructured.Unstructured, error) {
	data, err := b.Body(item.GroupResource(), version, item.Namespace, item.Name)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("%s at version %s: %w", item, version, err)
	}
	return obj, nil
}
