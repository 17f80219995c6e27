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
		return preferredRank
	case c.dir == "":
		return 1
	}
	return 0
}

// path is the path of the entry the copy was read from.
func (c candidate) path() string {
	return itemPath(location{gr: c.item.GroupResource(), dir: c.dir, namespace: c.item.Namespace, name: c.item.Name})
}

// describedChunk is how many described copies a chunk holds: a slice that grows by
// copying, a million long, costs more in page faults than its contents.
const describedChunk = 4096

// preferredRank is the rank of the preferred version's copy, which no other outranks:
// it describes its object as soon as it is read.
const preferredRank = 2

// reading is what reading a backup without a manifest gathers for index.
type reading struct {
	meta *metaReader
	// run is the best copy of the entries indexed last, one object's copies with the
	// same bytes, one after the other (Velero writes the 1.0 path's, then the preferred
	// version's): when the run ends, it joins described if it is the preferred
	// version's copy, which describes its object whatever else is read, and chosen, the
	// best copy so far of every other object, otherwise. The manifest is made of them
	// at the end, its size then known.
	run        candidate
	runKey     objKey
	described  [][]candidate // in chunks of describedChunk
	nDescribed int
	chosen     *scoped.Map[objScope, candidate] // by the object's scope and name
	items      []manifest.Item                  // the current chunk of the candidates' items
	types      manifest.Types                   // the Types they share
	versions   map[schema.GroupResource]map[string]bool
	preferred  map[schema.GroupResource]string
	// held and preferredAt are what versions and preferred recorded last: a
	// group-resource's entries come one after another, so the maps are written when
	// these change, not at each entry.
	held, preferredAt grVersion
}

// grVersion is a group-resource at a version.
type grVersion struct {
	gr      schema.GroupResource
	version string
}

// hold records that the backup holds gr at version.
func (rd *reading) hold(gr schema.GroupResource, version string) {
	if k := (grVersion{gr, version}); k != rd.held {
		vs := rd.versions[gr]
		if vs == nil {
			vs = map[string]bool{}
			rd.versions[gr] = vs
		}
		vs[version] = true
		rd.held = k
	}
}

// prefer records that the source cluster preferred gr at version.
func (rd *reading) prefer(gr schema.GroupResource, version string) {
	if k := (grVersion{gr, version}); k != rd.preferredAt {
		rd.preferred[gr] = version
		rd.preferredAt = k
	}
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
	items := false    // resource entries met
	prevItem := false // the entry before was a resource entry: the last one added to dec
	for {
		name, raw, data, err := e.next()
		if err == io.EOF {
			break
		}
		if err == nil {
			isItem := strings.HasPrefix(name, resourcesDir+"/")
			dup := isItem && prevItem && dec.repeats(data)
			prevItem = isItem
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
	// The body index is sorted while the manifest is made, on the other core.
	merged := make(chan error, 1)
	go func() { merged <- b.bodies.CompactMerge(b.mergeCopies) }()
	err = b.index(rd)
	if merr := <-merged; merr != nil {
		return merr
	}
	return err
}

// settle is called once every entry is read: the body index, from now on only read,
// is compacted, and the bodies still in memory follow the others to the spill file
// when there is one.
func (b *Backup) settle() error {
	if err := b.bodies.CompactMerge(b.mergeCopies); err != nil {
		return err
	}
	return b.store.settle()
}

// mergeCopies judges two copies of an object at one version, as place does, the body
// kept so far first: a versioned copy replaces an unversioned one, an unversioned copy
// never replaces a versioned one, and two copies of one kind are an error.
func (b *Backup) mergeCopies(k scoped.Key[bodyDir], kept, next bodyRef) (bodyRef, error) {
	if kept.unversioned == next.unversioned {
		dir := ""
		switch {
		case next.preferred:
			dir = k.Scope.version + preferredSuffix
		case !next.unversioned:
			dir = k.Scope.version
		}
		return bodyRef{}, &EntryError{Path: itemPath(location{gr: k.Scope.gr, dir: dir, namespace: k.Scope.namespace, name: k.Name}), Err: errDuplicate}
	}
	if next.unversioned {
		return kept, nil
	}
	return next, nil
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
	unversioned := loc.dir == ""
	// Every body is appended to the index, and the copies of one object at one version
	// are judged once every entry is read (settle: mergeCopies). The second copy of the
	// previous entry's is judged now.
	keep := true
	if shared {
		if last.placedUnversioned == unversioned {
			return errDuplicate
		}
		keep = !unversioned
	}
	last.kept = shared
	if keep {
		ref := last.ref
		if !shared {
			var err error
			if ref, err = b.store.add(data); err != nil {
				return err
			}
			*last = lastBody{obj: k, ref: ref, item: it, kept: true}
			rd.hold(loc.gr, version)
		}
		ref.unversioned, ref.preferred = unversioned, loc.preferred()
		if shared {
			// The body appended last is this one's, unversioned (placedUnversioned):
			// this versioned copy replaces it, as mergeCopies would.
			b.bodies.ReplaceLast(ref)
		} else {
			b.bodies.Append(key.dir(), key.name, ref)
		}
		last.placedUnversioned = unversioned
	}
	if loc.preferred() {
		rd.prefer(loc.gr, version)
	}
	if c := (candidate{item: it, dir: loc.dir}); !shared {
		rd.endRun()
		rd.run, rd.runKey = c, k
	} else if c.rank() > rd.run.rank() {
		rd.run = c
	}
	return nil
}

// endRun records the best copy of the run of entries indexed last, if any.
func (rd *reading) endRun() {
	c, k := rd.run, rd.runKey
	if c.item == nil {
		return
	}
	rd.run = candidate{}
	if c.rank() == preferredRank {
		if n := len(rd.described); n == 0 || len(rd.described[n-1]) == describedChunk {
			rd.described = append(rd.described, make([]candidate, 0, describedChunk))
		}
		last := &rd.described[len(rd.described)-1]
		*last = append(*last, c)
		rd.nDescribed++
		return
	}
	if prev, ok := rd.chosen.Get(k.scope(), k.name); !ok || c.rank() > prev.rank() {
		rd.chosen.Set(k.scope(), k.name, c)
	}
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

// index makes the manifest once every entry of a backup without one has been read:
// each object described by its preferred version's copy, or else by the copy chosen.
func (b *Backup) index(rd *reading) error {
	rd.endRun()
	b.manifest = manifest.New(rd.nDescribed + rd.chosen.Len())
	for gr, vs := range rd.versions {
		// With no preferred directory (format 1.0), the highest version is preferred.
		b.manifest.SetVersions(gr, slices.Collect(maps.Keys(vs)), rd.preferred[gr])
	}
	// The described copies go in at once (the manifest's two tables filled side by
	// side), the chosen ones after them.
	described := make([]*manifest.Item, 0, rd.nDescribed)
	for _, chunk := range rd.described {
		for _, c := range chunk {
			described = append(described, c.item)
		}
	}
	if i, err := b.manifest.AddAll(described); err != nil {
		c := rd.described[i/describedChunk][i%describedChunk]
		return &EntryError{Path: c.path(), Err: err}
	}
	for _, c := range rd.chosen.All() {
		if _, ok := b.manifest.Get(c.item.ID()); ok {
			continue // described by its preferred version's copy
		}
		if _, err := b.manifest.Add(c.item); err != nil {
			return &EntryError{Path: c.path(), Err: err}
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
		Type:      rd.types.Of(manifest.Type{Group: gv.Group, Version: gv.Version, Kind: meta.kind, Resource: gr.Resource}),
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
