package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/restoregraph/restoregraph/manifest"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Options bound what Read accepts and say where object bodies are kept.
// The zero value gives the defaults.
type Options struct {
	MaxEntryBytes int64 // one entry, uncompressed; default 32 MiB (etcd's limit is 1.5 MiB)
	MaxTotalBytes int64 // all entries, uncompressed; default 16 GiB
	MaxEntries    int64 // default 10 million
	// SpillDir, when set, keeps object bodies in files below this directory instead of
	// in memory. It must exist; Read writes nowhere else.
	SpillDir string
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
	return o
}

// Resource says which versions of one group-resource the backup holds, highest
// Kubernetes priority first, and which one the source cluster preferred.
type Resource = manifest.Resource

// Backup is a read backup: its manifest, its versions and its object bodies.
type Backup struct {
	format   string
	manifest *manifest.Manifest
	bodies   map[bodyKey]body
	root     *os.Root
	warnings []string
}

type bodyKey struct {
	gr                       schema.GroupResource
	version, namespace, name string
}

// body is an object's JSON, in memory or (spilled) at path below the spill directory.
type body struct {
	data []byte
	path string
	dir  string // the version directory it was read from; "" for the 1.0 path
}

// objectMeta is the part of an object the manifest records.
type objectMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		UID             types.UID         `json:"uid"`
		Labels          map[string]string `json:"labels"`
		Annotations     map[string]string `json:"annotations"`
		OwnerReferences []struct {
			UID types.UID `json:"uid"`
		} `json:"ownerReferences"`
	} `json:"metadata"`
}

// ReadFile reads the backup tarball at path.
func ReadFile(path string, opts Options) (*Backup, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, opts)
}

// Read reads a backup tarball, gzip-compressed (as Velero writes it) or not.
func Read(r io.Reader, opts Options) (*Backup, error) {
	opts = opts.withDefaults()
	b := &Backup{bodies: map[bodyKey]body{}}
	if opts.SpillDir != "" {
		root, err := os.OpenRoot(opts.SpillDir)
		if err != nil {
			return nil, fmt.Errorf("archive: spill directory: %w", err)
		}
		b.root = root
	}
	if err := b.read(r, opts); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Close releases the spill directory, if any. The files in it stay: the directory is
// the caller's.
func (b *Backup) Close() error {
	if b.root == nil {
		return nil
	}
	return b.root.Close()
}

type rawItem struct {
	loc  location
	meta objectMeta
	path string
}

func (b *Backup) read(r io.Reader, opts Options) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return &EntryError{Path: "(gzip header)", Err: err}
		}
		defer zr.Close()
		src = zr
	}
	tr := tar.NewReader(src)
	var (
		total, entries int64
		items          []rawItem
		seen           = map[location]string{}
	)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return &EntryError{Path: "(tar stream)", Err: err}
		}
		name, err := entryName(hdr)
		if err != nil {
			return &EntryError{Path: hdr.Name, Err: err}
		}
		if entries++; entries > opts.MaxEntries {
			return &LimitError{Path: hdr.Name, Limit: "entries", Max: opts.MaxEntries}
		}
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		if hdr.Size > opts.MaxEntryBytes {
			return &LimitError{Path: hdr.Name, Limit: "entry size", Max: opts.MaxEntryBytes}
		}
		if total += hdr.Size; total > opts.MaxTotalBytes {
			return &LimitError{Path: hdr.Name, Limit: "total size", Max: opts.MaxTotalBytes}
		}
		data, err := io.ReadAll(io.LimitReader(tr, opts.MaxEntryBytes+1))
		if err != nil {
			return &EntryError{Path: hdr.Name, Err: err}
		}
		switch {
		case name == metadataVersion:
			b.format = strings.TrimSpace(string(data))
		case name == ManifestPath && len(items) == 0:
			m, err := manifest.Decode(bytes.NewReader(data))
			if err != nil {
				return &EntryError{Path: hdr.Name, Err: err}
			}
			b.manifest = m
		case name == ManifestPath:
			b.warnings = append(b.warnings, "skipped "+name+": it comes after the bodies; the manifest is built from them")
		case strings.HasPrefix(name, resourcesDir+"/"):
			it, err := b.readItem(name, data, seen)
			if err != nil {
				return &EntryError{Path: hdr.Name, Err: err}
			}
			items = append(items, it)
		default:
			b.warnings = append(b.warnings, fmt.Sprintf("skipped %s: not part of the backup layout", name))
		}
	}
	if err := b.checkFormat(); err != nil {
		return err
	}
	return b.index(items)
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

func (b *Backup) readItem(name string, data []byte, seen map[location]string) (rawItem, error) {
	loc, err := parseItemPath(name)
	if err != nil {
		return rawItem{}, err
	}
	if prev, dup := seen[loc]; dup {
		return rawItem{}, fmt.Errorf("duplicate of %s", prev)
	}
	seen[loc] = name
	if b.manifest != nil {
		return b.keepBody(name, loc, loc.version(), data)
	}
	var meta objectMeta
	if err := json.Unmarshal(data, &meta); err != nil {
		return rawItem{}, fmt.Errorf("not a Kubernetes object in JSON: %w", err)
	}
	gv, err := schema.ParseGroupVersion(meta.APIVersion)
	switch {
	case err != nil || meta.APIVersion == "":
		return rawItem{}, fmt.Errorf("apiVersion %q is not group/version", meta.APIVersion)
	case meta.Kind == "":
		return rawItem{}, errors.New("kind is empty")
	case gv.Group != loc.gr.Group:
		return rawItem{}, fmt.Errorf("apiVersion %s is not of group %q named by the path", meta.APIVersion, loc.gr.Group)
	case loc.dir != "" && gv.Version != loc.version():
		return rawItem{}, fmt.Errorf("apiVersion %s does not match version directory %s", meta.APIVersion, loc.dir)
	case meta.Metadata.Name != loc.name:
		return rawItem{}, fmt.Errorf("metadata.name %q does not match the file name", meta.Metadata.Name)
	case meta.Metadata.Namespace != loc.namespace:
		return rawItem{}, fmt.Errorf("metadata.namespace %q does not match the path", meta.Metadata.Namespace)
	}
	it, err := b.keepBody(name, loc, gv.Version, data)
	it.meta = meta
	return it, err
}

// keepBody keeps an object's JSON, in memory or spilled, under its group-resource,
// version, namespace and name. A copy at the unversioned (format 1.0) path is keyed
// without a version until index decides which version it is.
func (b *Backup) keepBody(name string, loc location, version string, data []byte) (rawItem, error) {
	key := bodyKey{loc.gr, version, loc.namespace, loc.name}
	if loc.dir == "" {
		key.version = ""
	}
	bd := body{dir: loc.dir}
	if b.root != nil {
		if err := b.root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return rawItem{}, err
		}
		if err := b.root.WriteFile(name, data, 0o644); err != nil {
			return rawItem{}, err
		}
		bd.path = name
	} else {
		bd.data = data
	}
	b.bodies[key] = bd
	return rawItem{loc: loc, path: name}, nil
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

// index builds the manifest and the version table once every entry has been read. Each
// object enters the manifest once, at the source's preferred version.
func (b *Backup) index(items []rawItem) error {
	chosen := map[objKey]rawItem{}
	rank := func(it rawItem) int { // which copy of an object describes it
		switch {
		case it.loc.preferred():
			return 2
		case it.loc.dir == "":
			return 1
		}
		return 0
	}
	versions := map[schema.GroupResource]map[string]bool{}
	preferred := map[schema.GroupResource]string{}
	for _, it := range items {
		k := objKey{it.loc.gr, it.loc.namespace, it.loc.name}
		if prev, ok := chosen[k]; !ok || rank(it) > rank(prev) {
			chosen[k] = it
		}
		if versions[it.loc.gr] == nil {
			versions[it.loc.gr] = map[string]bool{}
		}
		if it.loc.dir != "" {
			versions[it.loc.gr][it.loc.version()] = true
			if it.loc.preferred() {
				preferred[it.loc.gr] = it.loc.version()
			}
		}
	}
	// Unversioned copies: dropped where a versioned copy holds the same object, else
	// keyed by their own apiVersion (format 1.0 and objects written only at the 1.0 path),
	// or by the manifest's version for the object when the backup carries one.
	for _, it := range items {
		if it.loc.dir != "" {
			continue
		}
		old := bodyKey{it.loc.gr, "", it.loc.namespace, it.loc.name}
		bd := b.bodies[old]
		delete(b.bodies, old)
		gv, _ := schema.ParseGroupVersion(it.meta.APIVersion)
		if b.manifest != nil {
			gv.Version = b.manifestVersion(it.loc)
		}
		key := bodyKey{it.loc.gr, gv.Version, it.loc.namespace, it.loc.name}
		if _, ok := b.bodies[key]; !ok {
			b.bodies[key] = bd
			versions[it.loc.gr][gv.Version] = true
		}
	}
	if b.manifest != nil {
		b.checkManifest(chosen)
		return nil
	}
	keys := make([]objKey, 0, len(chosen))
	for k := range chosen {
		keys = append(keys, k)
	}
	b.manifest = manifest.New(len(keys))
	for gr, vs := range versions {
		// With no preferred directory (format 1.0), the highest version is preferred.
		b.manifest.SetVersions(gr, slices.Collect(maps.Keys(vs)), preferred[gr])
	}
	for _, k := range keys {
		it := chosen[k]
		gv, _ := schema.ParseGroupVersion(it.meta.APIVersion)
		m := it.meta.Metadata
		var owners []types.UID
		for _, o := range m.OwnerReferences {
			owners = append(owners, o.UID)
		}
		item := &manifest.Item{
			Group: gv.Group, Version: gv.Version, Kind: it.meta.Kind, Resource: it.loc.gr.Resource,
			Namespace: m.Namespace, Name: m.Name, UID: m.UID,
			Labels: manifest.PairsFromMap(m.Labels), Annotations: manifest.PairsFromMap(m.Annotations),
			OwnerUIDs: owners,
		}
		if _, err := b.manifest.Add(item); err != nil {
			return &EntryError{Path: it.path, Err: err}
		}
	}
	return nil
}

// Format returns the backup's format version: Format10 or Format11.
func (b *Backup) Format() string { return b.format }

// Manifest returns the backup's manifest; each object appears once, at the source's
// preferred version.
func (b *Backup) Manifest() *manifest.Manifest { return b.manifest }

// Warnings returns what Read skipped or assumed, in the order met.
func (b *Backup) Warnings() []string { return b.warnings }

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
	bd, ok := b.bodies[bodyKey{gr, version, namespace, name}]
	if !ok {
		return nil, fmt.Errorf("%s %s/%s at version %s: %w", gr, namespace, name, version, ErrNotFound)
	}
	if bd.path == "" {
		return bd.data, nil
	}
	return b.root.ReadFile(bd.path)
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

// manifestVersion is the version the manifest records for the object at loc (its
// preferred one), or that of its group-resource when the manifest lists it under
// another group.
func (b *Backup) manifestVersion(loc location) string {
	id := manifest.ID{Group: loc.gr.Group, Resource: loc.gr.Resource, Namespace: loc.namespace, Name: loc.name}
	if it, ok := b.manifest.Get(id); ok && it.GroupResource() == loc.gr {
		return it.Version
	}
	if r, ok := b.manifest.Resource(loc.gr); ok {
		return r.Preferred
	}
	return ""
}

// checkManifest warns of what the carried manifest and the bodies disagree on: an
// object with no body, a body with no object. Restoring an object without its body fails
// that object, naming it.
func (b *Backup) checkManifest(bodies map[objKey]rawItem) {
	missing, extra := 0, 0
	inManifest := map[objKey]bool{}
	note := func(it *manifest.Item) {
		k := objKey{it.GroupResource(), it.Namespace, it.Name}
		inManifest[k] = true
		if _, ok := bodies[k]; !ok {
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
	for k := range bodies {
		if !inManifest[k] {
			extra++
		}
	}
	if missing > 0 {
		b.warnings = append(b.warnings, fmt.Sprintf("the manifest names %d object(s) with no body in the backup", missing))
	}
	if extra > 0 {
		b.warnings = append(b.warnings, fmt.Sprintf("%d body(ies) in the backup belong to no object of its manifest", extra))
	}
}
