package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/restoregraph/restoregraph/internal/readahead"
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
	MaxTotalBytes int64 // all entries, uncompressed; default 16 GiB
	MaxEntries    int64 // default 10 million
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
	b.store.reuse, b.store.spare = false, nil // from now on, callers hold bodies
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

// entries reads a tarball entry by entry, enforcing the limits.
type entries struct {
	opts   Options
	ahead  *readahead.Reader // inflating on its own goroutine; nil for a plain tarball
	tr     *tar.Reader
	closer io.Closer // the file, when ReadFile opened it

	total, count int64
	buf, prev    []byte // this entry's bytes and the previous one's, swapped
	// The last body stored, for the second copy of an object (Velero writes the
	// preferred version twice, one after the other): the same bytes are kept once.
	// prevKept says the previous entry's bytes are that body's; kept, this entry's.
	prevObj        objKey
	prevRef        bodyRef
	prevItem       *manifest.Item
	prevKept, kept bool
}

func newEntries(r io.Reader, opts Options) (*entries, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	e := &entries{opts: opts}
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &EntryError{Path: "(gzip header)", Err: err}
		}
		// Inflate on a second goroutine so that decompression and parsing overlap.
		e.ahead = readahead.New(zr, 256<<10, 8)
		src = e.ahead
	}
	e.tr = tar.NewReader(src)
	return e, nil
}

func (e *entries) close() {
	if e.ahead != nil {
		e.ahead.Close()
	}
	if e.closer != nil {
		e.closer.Close()
	}
}

// next returns the next regular file's cleaned name and bytes (valid until the call
// after the next), or io.EOF.
func (e *entries) next() (hdr *tar.Header, name string, data []byte, err error) {
	for {
		hdr, err = e.tr.Next()
		if err == io.EOF {
			return nil, "", nil, io.EOF
		}
		if err != nil {
			return nil, "", nil, &EntryError{Path: "(tar stream)", Err: err}
		}
		name, err = entryName(hdr)
		if err != nil {
			return nil, "", nil, &EntryError{Path: hdr.Name, Err: err}
		}
		if e.count++; e.count > e.opts.MaxEntries {
			return nil, "", nil, &LimitError{Path: hdr.Name, Limit: "entries", Max: e.opts.MaxEntries}
		}
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		if hdr.Size > e.opts.MaxEntryBytes {
			return nil, "", nil, &LimitError{Path: hdr.Name, Limit: "entry size", Max: e.opts.MaxEntryBytes}
		}
		if e.total += hdr.Size; e.total > e.opts.MaxTotalBytes {
			return nil, "", nil, &LimitError{Path: hdr.Name, Limit: "total size", Max: e.opts.MaxTotalBytes}
		}
		e.buf, e.prev = e.prev, e.buf
		e.prevKept, e.kept = e.kept, false
		if int64(cap(e.buf)) < hdr.Size {
			e.buf = make([]byte, hdr.Size, max(hdr.Size, 64<<10))
		}
		e.buf = e.buf[:hdr.Size]
		if _, err := io.ReadFull(e.tr, e.buf); err != nil {
			return nil, "", nil, &EntryError{Path: hdr.Name, Err: err}
		}
		return hdr, name, e.buf, nil
	}
}

// same reports whether data is the previous entry's body again, for the same object,
// and the previous entry is the body last stored.
func (e *entries) same(k objKey, data []byte) bool {
	return e.prevKept && e.prevObj == k && bytes.Equal(e.prev, data)
}

// stored records that this entry's bytes are the body at ref.
func (e *entries) stored(k objKey, ref bodyRef, it *manifest.Item) {
	e.prevObj, e.prevRef, e.prevItem, e.kept = k, ref, it, true
}

// candidate is one copy of an object, for choosing the copy that describes it: the
// manifest item its metadata makes and the version directory it was found in.
type candidate struct {
	item *manifest.Item
	dir  string
}

// rank says which copy of an object describes it: the preferred version's, then the
// one at the 1.0 path, then any other.
func (c candidate) rank() int {
	switch {
	case strings.HasSuffix(c.dir, preferredSuffix):
		return 2
	case c.dir == "":
		return 1
	}
	return 0
}

// reading is what reading a backup without a manifest gathers for index.
type reading struct {
	meta      *metaReader
	chosen    map[objKey]candidate
	items     []manifest.Item // the current chunk of the candidates' items
	versions  map[schema.GroupResource]map[string]bool
	preferred map[schema.GroupResource]string
}

func (b *Backup) read(r io.Reader, opts Options, closer io.Closer) error {
	e, err := newEntries(r, opts)
	if err != nil {
		return err
	}
	rd := &reading{meta: newMetaReader(b.strs), chosen: map[objKey]candidate{},
		versions: map[schema.GroupResource]map[string]bool{}, preferred: map[schema.GroupResource]string{}}
	items := false
	for {
		hdr, name, data, err := e.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			e.close()
			return err
		}
		switch {
		case name == metadataVersion:
			b.format = strings.TrimSpace(string(data))
		case name == ManifestPath && !items:
			m, err := manifest.Decode(bytes.NewReader(data))
			if err != nil {
				e.close()
				return &EntryError{Path: hdr.Name, Err: err}
			}
			b.manifest = m
			if err := b.checkFormat(); err != nil {
				e.close()
				return err
			}
			b.rest = e
			if closer != nil {
				e.closer = closer
				return nil
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			return b.readRest(nil)
		case name == ManifestPath:
			b.warnings = append(b.warnings, "skipped "+name+": it comes after the bodies; the manifest is built from them")
		case strings.HasPrefix(name, resourcesDir+"/"):
			items = true
			if err := b.readItem(e, rd, name, data); err != nil {
				e.close()
				return &EntryError{Path: hdr.Name, Err: err}
			}
		default:
			b.warnings = append(b.warnings, fmt.Sprintf("skipped %s: not part of the backup layout", name))
		}
	}
	e.close()
	if err := b.checkFormat(); err != nil {
		return err
	}
	return b.index(rd)
}

// settle is called once every entry is read: the body index, from now on only read,
// is compacted, and the bodies still in memory follow the others to the spill file
// when there is one.
func (b *Backup) settle() error {
	b.bodies.Compact()
	return b.store.settle()
}

// readRest reads the entries after a carried manifest, until the body of want is read
// (nil: to the end). b.mu is held.
func (b *Backup) readRest(want *bodyKey) error {
	for b.rest != nil {
		if want != nil {
			if _, ok := b.bodies.Get(want.dir(), want.name); ok {
				return nil
			}
		}
		hdr, name, data, err := b.rest.next()
		if err == nil && strings.HasPrefix(name, resourcesDir+"/") {
			if err = b.keepBody(b.rest, name, data); err != nil {
				err = &EntryError{Path: hdr.Name, Err: err}
			}
		} else if err == nil {
			b.warnings = append(b.warnings, fmt.Sprintf("skipped %s: not part of the backup layout", name))
		}
		if err == io.EOF {
			b.rest.close()
			b.rest = nil
			b.checkManifest()
			if err := b.settle(); err != nil {
				b.restErr = err
				return err
			}
			return nil
		}
		if err != nil {
			b.rest.close()
			b.rest, b.restErr = nil, err
			return err
		}
	}
	return b.restErr
}

// entryName validates a header and returns its cleaned name.
func entryName(hdr *tar.Header) (string, error) {
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir:
	default:
		return "", fmt.Errorf("%w: type %q is not a regular file or directory", ErrUnsafeEntry, hdr.Typeflag)
	}
	name := strings.TrimPrefix(hdr.Name, "./")
	if hdr.Typeflag == tar.TypeDir {
		name = strings.TrimSuffix(name, "/")
		if name == "" || name == "." {
			return ".", nil
		}
	}
	if !filepath.IsLocal(name) || path.Clean(name) != name || strings.ContainsAny(name, "\\\x00") {
		return "", fmt.Errorf("%w: path is absolute, leaves the archive root or is not clean", ErrUnsafeEntry)
	}
	return name, nil
}

var errDuplicate = errors.New("the same object at the same version is already in the backup")

// place says whether a body for key, found at loc, is kept: a versioned copy replaces
// an unversioned one of the same version, an unversioned copy never replaces a
// versioned one, and two copies of one kind at one version are an error.
func (b *Backup) place(key bodyKey, loc location) (keep bool, err error) {
	prev, exists := b.bodies.Get(key.dir(), key.name)
	switch {
	case !exists:
		return true, nil
	case prev.unversioned == (loc.dir == ""):
		return false, errDuplicate
	}
	return loc.dir != "", nil
}

// readItem reads an object's entry when the backup carries no manifest: its metadata
// (checked against its path) describes it.
func (b *Backup) readItem(e *entries, rd *reading, name string, data []byte) error {
	loc, err := parseItemPath(name)
	if err != nil {
		return err
	}
	loc = own(b.strs, loc)
	k := objKey{loc.gr, loc.namespace, loc.name}
	var it *manifest.Item
	shared := e.same(k, data) && e.prevItem != nil
	if shared {
		it = e.prevItem
	} else {
		meta, err := rd.meta.read(data)
		if err != nil {
			return err
		}
		if err := checkMeta(loc, &meta); err != nil {
			return err
		}
		it = rd.item(k.gr, &meta)
	}
	// The name the item keeps (checkMeta compared them) is the one the keys keep too.
	loc.name, k.name = it.Name, it.Name
	version := it.Version
	if loc.dir != "" && version != loc.version() {
		return fmt.Errorf("apiVersion %s does not match version directory %s", it.GroupVersionKind().GroupVersion(), loc.dir)
	}
	key := bodyKey{loc.gr, version, loc.namespace, loc.name}
	keep, err := b.place(key, loc)
	if err != nil {
		return err
	}
	e.kept = shared
	if keep {
		ref := e.prevRef
		if !shared {
			if ref, err = b.store.add(data); err != nil {
				return err
			}
			e.stored(k, ref, it)
		}
		ref.unversioned = loc.dir == ""
		b.bodies.Set(key.dir(), key.name, ref)
		if rd.versions[loc.gr] == nil {
			rd.versions[loc.gr] = map[string]bool{}
		}
		rd.versions[loc.gr][version] = true
	}
	if loc.preferred() {
		rd.preferred[loc.gr] = version
	}
	c := candidate{item: it, dir: loc.dir}
	if prev, ok := rd.chosen[k]; !ok || c.rank() > prev.rank() {
		rd.chosen[k] = c
	}
	return nil
}

// checkMeta checks an object's metadata against the path it was found at.
func checkMeta(loc location, meta *objectMeta) error {
	gv, err := schema.ParseGroupVersion(meta.apiVersion)
	switch {
	case err != nil || meta.apiVersion == "":
		return fmt.Errorf("apiVersion %q is not group/version", meta.apiVersion)
	case meta.kind == "":
		return errors.New("kind is empty")
	case gv.Group != loc.gr.Group:
		return fmt.Errorf("apiVersion %s is not of group %q named by the path", meta.apiVersion, loc.gr.Group)
	case meta.name != loc.name:
		return fmt.Errorf("metadata.name %q does not match the file name", meta.name)
	case meta.namespace != loc.namespace:
		return fmt.Errorf("metadata.namespace %q does not match the path", meta.namespace)
	}
	return nil
}

// keepBody keeps an object's body when the backup carries its manifest: the manifest
// describes the object, and a copy at the unversioned (1.0) path is at the version the
// manifest records for it. b.mu is held.
func (b *Backup) keepBody(e *entries, name string, data []byte) error {
	loc, err := parseItemPath(name)
	if err != nil {
		return err
	}
	loc = own(b.strs, loc)
	it, listed := b.manifest.Get(manifest.ID{Group: loc.gr.Group, Resource: loc.gr.Resource, Namespace: loc.namespace, Name: loc.name})
	if listed {
		loc.name = it.Name // the manifest keeps it already
	} else {
		loc.name = b.strs.Copy(unsafe.Slice(unsafe.StringData(loc.name), len(loc.name)))
	}
	version := loc.version()
	if loc.dir == "" {
		version = b.manifestVersion(loc.gr, it)
	}
	key := bodyKey{loc.gr, version, loc.namespace, loc.name}
	keep, err := b.place(key, loc)
	if !keep || err != nil {
		return err
	}
	k := objKey{loc.gr, loc.namespace, loc.name}
	ref := e.prevRef
	if e.same(k, data) {
		e.kept = true
	} else {
		if ref, err = b.store.add(data); err != nil {
			return err
		}
		e.stored(k, ref, nil)
	}
	ref.unversioned = loc.dir == ""
	b.bodies.Set(key.dir(), key.name, ref)
	return nil
}

func (b *Backup) checkFormat() error {
	switch b.format {
	case "":
		b.format = Format10
		b.warnings = append(b.warnings, "no metadata/version: read as format "+Format10)
	case "1", "1.0", "1.0.0":
		b.format = Format10
	case "1.1", Format11:
		b.format = Format11
	default:
		if strings.HasPrefix(b.format, "1.") {
			b.warnings = append(b.warnings, fmt.Sprintf("format %s is newer than %s: read as %s", b.format, Format11, Format11))
			b.format = Format11
			return nil
		}
		return &EntryError{Path: metadataVersion, Err: fmt.Errorf("%w %q", ErrUnsupportedFormat, b.format)}
	}
	return nil
}

// index builds the manifest once every entry of a backup without one has been read.
// Each object enters the manifest once, described by its preferred copy.
func (b *Backup) index(rd *reading) error {
	b.manifest = manifest.New(len(rd.chosen))
	for gr, vs := range rd.versions {
		// With no preferred directory (format 1.0), the highest version is preferred.
		b.manifest.SetVersions(gr, slices.Collect(maps.Keys(vs)), rd.preferred[gr])
	}
	for k, c := range rd.chosen {
		if _, err := b.manifest.Add(c.item); err != nil {
			return &EntryError{Path: itemPath(location{gr: k.gr, dir: c.dir, namespace: k.namespace, name: k.name}), Err: err}
		}
	}
	return nil
}

// item makes the manifest item of an object of gr with metadata meta. Items are made in
// chunks, so that a million of them are a few hundred allocations; an item whose copy
// is not chosen stays in its chunk unused.
func (rd *reading) item(gr schema.GroupResource, meta *objectMeta) *manifest.Item {
	if len(rd.items) == cap(rd.items) {
		rd.items = make([]manifest.Item, 0, 4096)
	}
	gv, _ := schema.ParseGroupVersion(meta.apiVersion)
	rd.items = append(rd.items, manifest.Item{
		Group: gv.Group, Version: gv.Version, Kind: meta.kind, Resource: gr.Resource,
		Namespace: meta.namespace, Name: meta.name, UID: meta.uid,
		Labels: meta.labels, Annotations: meta.annotations, OwnerUIDs: meta.owners,
	})
	return &rd.items[len(rd.items)-1]
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

// Body returns the JSON of the object gr namespace/name at version.
func (b *Backup) Body(gr schema.GroupResource, version, namespace, name string) ([]byte, error) {
	key := bodyKey{gr, version, namespace, name}
	b.mu.RLock()
	ref, ok := b.bodies.Get(key.dir(), key.name)
	pending := b.rest != nil
	if ok {
		defer b.mu.RUnlock()
		return b.store.get(ref)
	}
	b.mu.RUnlock()
	if pending {
		b.mu.Lock()
		defer b.mu.Unlock()
		if err := b.readRest(&key); err != nil {
			return nil, fmt.Errorf("%s %s/%s at version %s: the backup could not be read to it: %w", gr, namespace, name, version, err)
		}
		if ref, ok = b.bodies.Get(key.dir(), key.name); ok {
			return b.store.get(ref)
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

// objKey names an object of the backup across its versions.
type objKey struct {
	gr              schema.GroupResource
	namespace, name string
}

// manifestVersion is the version the manifest records for an object of gr, it being
// the item the manifest lists under the object's identity (nil when none): the item's
// own (its preferred one), or that of gr when the item is listed under another group.
func (b *Backup) manifestVersion(gr schema.GroupResource, it *manifest.Item) string {
	if it != nil && it.GroupResource() == gr {
		return it.Version
	}
	if r, ok := b.manifest.Resource(gr); ok {
		return r.Preferred
	}
	return ""
}

// checkManifest warns of what the carried manifest and the bodies disagree on: an
// object with no body, a body with no object. Restoring an object without its body fails
// that object, naming it. b.mu is held.
func (b *Backup) checkManifest() {
	bodies := make(map[objKey]bool, b.bodies.Len())
	for k := range b.bodies.All() {
		bodies[objKey{k.Scope.gr, k.Scope.namespace, k.Name}] = true
	}
	missing, inManifest := 0, 0
	note := func(it *manifest.Item) {
		if bodies[objKey{it.GroupResource(), it.Namespace, it.Name}] {
			inManifest++
		} else {
			missing++
		}
	}
	for _, it := range b.manifest.Items() {
		note(it)
	}
	for _, copies := range b.manifest.Folded() {
		for _, it := range copies {
			note(it)
		}
	}
	if missing > 0 {
		b.warnings = append(b.warnings, fmt.Sprintf("the manifest names %d object(s) with no body in the backup", missing))
	}
	if extra := len(bodies) - inManifest; extra > 0 {
		b.warnings = append(b.warnings, fmt.Sprintf("%d body(ies) in the backup belong to no object of its manifest", extra))
	}
}
