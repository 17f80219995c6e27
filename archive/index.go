package archive

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unsafe"

	"github.com/restoregraph/restoregraph/internal/scoped"
	"github.com/restoregraph/restoregraph/internal/strslab"
	"github.com/restoregraph/restoregraph/manifest"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

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
	chosen    *scoped.Map[objScope, candidate] // by the object's scope and name
	items     []manifest.Item                  // the current chunk of the candidates' items
	versions  map[schema.GroupResource]map[string]bool
	preferred map[schema.GroupResource]string
}

// read walks the tarball to the manifest, when the backup carries one before its
// bodies, else to the end, indexing every object from its copies' metadata.
func (b *Backup) read(r io.Reader, opts Options, closer io.Closer) error {
	e, err := newEntries(r, opts)
	if err != nil {
		return err
	}
	// The metadata reader of the index (for copies the decoder leaves to it) keeps its
	// strings in a slab of its own: the walk's own(b.strs, ...) runs beside the index.
	rd := &reading{meta: newMetaReader(strslab.New(1 << 16)), chosen: scoped.New[objScope, candidate](0),
		versions: map[schema.GroupResource]map[string]bool{}, preferred: map[schema.GroupResource]string{}}
	var dec decoding
	defer dec.stop()
	// index indexes a decoded batch, on the index's goroutine.
	index := func(bt *batch) error {
		for i := range bt.entries {
			p := &bt.entries[i]
			if err := b.readItem(&e.last, rd, p, bt.bytes(i)); err != nil {
				return &EntryError{Path: p.raw, Err: err}
			}
		}
		return nil
	}
	items := false // resource entries met
	for {
		name, raw, data, err := e.next()
		if err == io.EOF {
			break
		}
		if err == nil {
			isItem := strings.HasPrefix(name, resourcesDir+"/")
			dup := e.dup(isItem, data)
			switch {
			case name == metadataVersion:
				b.format = strings.TrimSpace(string(data))
			case name == ManifestPath && !items:
				m, err := manifest.Decode(bytes.NewReader(data))
				if err != nil {
					e.close()
					return &EntryError{Path: raw, Err: err}
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
			case isItem:
				items = true
				p := pending{raw: raw, dup: dup}
				if p.loc, p.err = parseItemPath(name); p.err == nil {
					p.loc = own(b.strs, p.loc)
				}
				if err := dec.add(p, data, index); err != nil {
					e.close() // the index met an error in an earlier entry
					return err
				}
			default:
				b.warnings = append(b.warnings, fmt.Sprintf("skipped %s: not part of the backup layout", name))
			}
		}
		if err != nil { // the tarball's: what was read before it is judged first
			if ierr := dec.finish(index); ierr != nil {
				err = ierr
			}
			e.close()
			return err
		}
	}
	e.close()
	if err := dec.finish(index); err != nil {
		return err
	}
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
		name, raw, data, err := b.rest.next()
		if err == nil {
			isItem := strings.HasPrefix(name, resourcesDir+"/")
			dup := b.rest.dup(isItem, data)
			if !isItem {
				b.warnings = append(b.warnings, fmt.Sprintf("skipped %s: not part of the backup layout", name))
			} else if err = b.keepBody(&b.rest.last, dup, name, data); err != nil {
				err = &EntryError{Path: raw, Err: err}
			}
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

// readItem indexes an object's entry when the backup carries no manifest: its
// metadata (checked against its path) describes it. Entries are indexed in the order
// read.
func (b *Backup) readItem(last *lastBody, rd *reading, p *pending, data []byte) error {
	if p.err != nil {
		return p.err
	}
	loc := p.loc
	k := objKey{loc.gr, loc.namespace, loc.name}
	var it *manifest.Item
	// The second copy of an object, the same bytes as the first, shares its item and
	// its body.
	shared := last.shared(p.dup, k) && last.item != nil
	if shared {
		it = last.item
	} else {
		meta, err := p.meta, p.metaErr
		if p.dup { // the decoder leaves a copy to this
			meta, err = rd.meta.read(data)
		}
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
	last.kept = shared
	if keep {
		ref := last.ref
		if !shared {
			if ref, err = b.store.add(data); err != nil {
				return err
			}
			*last = lastBody{obj: k, ref: ref, item: it, kept: true}
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
	if prev, ok := rd.chosen.Get(k.scope(), k.name); !ok || c.rank() > prev.rank() {
		rd.chosen.Set(k.scope(), k.name, c)
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
func (b *Backup) keepBody(last *lastBody, dup bool, name string, data []byte) error {
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
	k := objKey{loc.gr, loc.namespace, loc.name}
	shared := last.shared(dup, k)
	keep, err := b.place(key, loc)
	if !keep || err != nil {
		return err
	}
	ref := last.ref
	if shared {
		last.kept = true
	} else {
		if ref, err = b.store.add(data); err != nil {
			return err
		}
		*last = lastBody{obj: k, ref: ref, kept: true}
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
	b.manifest = manifest.New(rd.chosen.Len())
	for gr, vs := range rd.versions {
		// With no preferred directory (format 1.0), the highest version is preferred.
		b.manifest.SetVersions(gr, slices.Collect(maps.Keys(vs)), rd.preferred[gr])
	}
	for k, c := range rd.chosen.All() {
		if _, err := b.manifest.Add(c.item); err != nil {
			return &EntryError{Path: itemPath(location{gr: k.Scope.gr, dir: c.dir, namespace: k.Scope.namespace, name: k.Name}), Err: err}
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

// objKey names an object of the backup across its versions.
type objKey struct {
	gr              schema.GroupResource
	namespace, name string
}

// objScope is an objKey but the name: the objects of one group-resource in one
// namespace.
type objScope struct {
	gr        schema.GroupResource
	namespace string
}

func (k objKey) scope() objScope { return objScope{k.gr, k.namespace} }

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
