package archive

import (
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"unsafe"

	"github.com/restoregraph/restoregraph/internal/jsontree"
	"github.com/restoregraph/restoregraph/internal/strslab"
	"github.com/restoregraph/restoregraph/manifest"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// objectMeta is the part of an object the manifest records.
type objectMeta struct {
	apiVersion, kind string
	name, namespace  string
	uid              types.UID
	labels           manifest.Pairs
	annotations      manifest.Pairs
	owners           []types.UID
}

// metaReader reads objectMeta from object bodies with jsontree's scan, which checks
// spec, status and the rest without building them. Strings are copied into append-only
// slabs and the ones that repeat across objects (apiVersion, kind, namespace, label
// keys) are shared, so that a million objects are a few thousand allocations rather
// than tens of millions.
type metaReader struct {
	scratch []byte // see unquote
	strs    *strslab.Strings

	// Reused while reading one object's labels or annotations: each pair's key
	// (interned) and its value's bytes at vals[at:at+n].
	pairBuf []rawPair
	vals    []byte
	// sets holds the label and annotation sets read so far, by a hash of their pairs:
	// the objects of one application (its Deployment, ReplicaSets, Pods, Service,
	// ConfigMaps) most often carry the same labels, and an object that does shares
	// the set and its strings with the first that did.
	sets map[uint64]manifest.Pairs
	seed maphash.Seed
}

// rawPair is a label or annotation read but not kept yet.
type rawPair struct {
	key   string
	at, n int
}

func newMetaReader(s *strslab.Strings) *metaReader {
	return &metaReader{strs: s, scratch: make([]byte, 0, 512), sets: map[uint64]manifest.Pairs{}, seed: maphash.MakeSeed()}
}

var errNotObject = errors.New("not a Kubernetes object in JSON")

// read parses data, a whole JSON object, and returns its metadata. The whole body is
// checked to be JSON that a restore decodes (jsontree.Object), but for numbers, which
// are checked as JSON and not for float64's range; the metadata is what that decode
// makes of it: of duplicate names, the last. Every byte is scanned once: the members
// read are read where they are, not checked first and scanned again.
func (r *metaReader) read(data []byte) (objectMeta, error) {
	var m objectMeta
	i, err := jsontree.ObjectAt(data, 0, func(name []byte, at int) (int, error) {
		switch string(name) {
		case "apiVersion":
			return r.commonAt(data, at, &m.apiVersion)
		case "kind":
			return r.commonAt(data, at, &m.kind)
		case "metadata":
			m.name, m.namespace, m.uid, m.labels, m.annotations, m.owners = "", "", "", nil, nil, nil
			return r.metadata(&m, data, at)
		}
		return jsontree.SkipAt(data, at)
	})
	if err == nil {
		err = jsontree.End(data, i)
	}
	if err != nil {
		return objectMeta{}, fmt.Errorf("%w: %v", errNotObject, err)
	}
	return m, nil
}

// null reports whether data holds null at at. What follows it is the caller's scan's
// to check.
func null(data []byte, at int) bool {
	return len(data)-at >= 4 && string(data[at:at+4]) == "null"
}

func (r *metaReader) metadata(m *objectMeta, data []byte, at int) (int, error) {
	if null(data, at) {
		return at + 4, nil
	}
	return jsontree.ObjectAt(data, at, func(name []byte, at int) (int, error) {
		switch string(name) {
		case "name":
			return r.strAt(data, at, &m.name)
		case "namespace":
			return r.commonAt(data, at, &m.namespace)
		case "uid":
			var s string
			end, err := r.strAt(data, at, &s)
			m.uid = types.UID(s)
			return end, err
		case "labels":
			return r.pairs(data, at, &m.labels)
		case "annotations":
			return r.pairs(data, at, &m.annotations)
		case "ownerReferences":
			return r.owners(m, data, at)
		}
		return jsontree.SkipAt(data, at)
	})
}

func (r *metaReader) owners(m *objectMeta, data []byte, at int) (int, error) {
	m.owners = nil
	if null(data, at) {
		return at + 4, nil
	}
	return jsontree.ArrayAt(data, at, func(at int) (int, error) {
		return jsontree.ObjectAt(data, at, func(name []byte, at int) (int, error) {
			if string(name) != "uid" {
				return jsontree.SkipAt(data, at)
			}
			var s string
			end, err := r.strAt(data, at, &s)
			m.owners = append(m.owners, types.UID(s))
			return end, err
		})
	})
}

// pairs reads the map of strings (labels, annotations) at data[at] into *dst as sorted
// pairs; of duplicate keys, the last value. A set equal to one read before is that one:
// Pairs are never changed once read.
func (r *metaReader) pairs(data []byte, at int, dst *manifest.Pairs) (int, error) {
	*dst = nil
	if null(data, at) {
		return at + 4, nil
	}
	p, vals := r.pairBuf[:0], r.vals[:0]
	end, err := jsontree.ObjectAt(data, at, func(name []byte, at int) (int, error) {
		key := r.strs.Intern(name)
		end, v, err := r.unquoteAt(data, at)
		p = append(p, rawPair{key: key, at: len(vals), n: len(v)})
		vals = append(vals, v...)
		return end, err
	})
	r.pairBuf, r.vals = p, vals
	if err != nil || len(p) == 0 {
		return end, err
	}
	*dst = r.set(p, vals)
	return end, nil
}

// set returns the pairs p, whose values are in vals, as a set: the one read before
// when it is equal.
func (r *metaReader) set(p []rawPair, vals []byte) manifest.Pairs {
	// Stable, and the last of each run of one key kept: the last value wins.
	slices.SortStableFunc(p, func(a, b rawPair) int { return strings.Compare(a.key, b.key) })
	out := p[:0]
	for i := range p {
		if i+1 < len(p) && p[i+1].key == p[i].key {
			continue
		}
		out = append(out, p[i])
	}
	var h maphash.Hash
	h.SetSeed(r.seed)
	for _, rp := range out {
		h.WriteString(rp.key)
		h.WriteByte(0)
		h.Write(vals[rp.at : rp.at+rp.n])
		h.WriteByte(0)
	}
	sum := h.Sum64()
	if seen, ok := r.sets[sum]; ok && sameSet(seen, out, vals) {
		return seen
	}
	// Exactly as long as it is: append's spare capacity, a million times over, is not.
	set := make(manifest.Pairs, len(out))
	for i, rp := range out {
		set[i] = manifest.Pair{Key: rp.key, Value: r.strs.Copy(vals[rp.at : rp.at+rp.n])}
	}
	if _, ok := r.sets[sum]; !ok { // of two sets with one hash, the first is shared
		r.sets[sum] = set
	}
	return set
}

// sameSet reports whether set holds the pairs of out, whose values are in vals.
func sameSet(set manifest.Pairs, out []rawPair, vals []byte) bool {
	if len(set) != len(out) {
		return false
	}
	for i, rp := range out {
		if set[i].Key != rp.key || set[i].Value != string(vals[rp.at:rp.at+rp.n]) {
			return false
		}
	}
	return true
}

// unquoteAt reads the string at data[at]: it returns the offset just past it and the
// string, valid until the next call. A string with escapes is decoded into scratch,
// which is never grown: a longer one is rare.
func (r *metaReader) unquoteAt(data []byte, at int) (int, []byte, error) {
	end, err := jsontree.SkipAt(data, at)
	if err != nil {
		return 0, nil, err
	}
	s, ok := jsontree.Unquote(r.scratch[:0], data[at:end])
	if !ok {
		return 0, nil, fmt.Errorf("expected a string, found %.20s", data[at:end])
	}
	return end, s, nil
}

// strAt reads the string at data[at] into *dst, a copy of its own.
func (r *metaReader) strAt(data []byte, at int, dst *string) (int, error) {
	end, b, err := r.unquoteAt(data, at)
	*dst = r.strs.Copy(b)
	return end, err
}

// commonAt reads the string at data[at] into *dst, interned: one that repeats across
// objects (an apiVersion, a kind, a namespace).
func (r *metaReader) commonAt(data []byte, at int, dst *string) (int, error) {
	end, b, err := r.unquoteAt(data, at)
	*dst = r.strs.Intern(b)
	return end, err
}

// own returns loc with its group-resource, directory and namespace interned, out of the
// entry's name. Its name is still the entry's: the caller swaps in a copy that is kept
// anyway (the manifest item's), so that a million names are not kept twice or three
// times (Velero writes each object twice).
func own(s *strslab.Strings, loc location) location {
	in := func(v string) string { return s.Intern(unsafe.Slice(unsafe.StringData(v), len(v))) }
	return location{
		gr:        schema.GroupResource{Group: in(loc.gr.Group), Resource: in(loc.gr.Resource)},
		dir:       in(loc.dir),
		namespace: in(loc.namespace),
		name:      loc.name,
	}
}
