package archive

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
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

// metaReader reads objectMeta from object bodies token by token, skipping spec, status
// and the rest without building them. Strings are copied into append-only slabs and the
// ones that repeat across objects (apiVersion, kind, namespace, label keys) are shared,
// so that a million objects are a few thousand allocations rather than tens of millions.
type metaReader struct {
	dec     *jsontext.Decoder
	src     bytes.Reader
	scratch []byte
	pairBuf manifest.Pairs // reused while reading one object's labels or annotations
	strs    *strslab.Strings
}

func newMetaReader(s *strslab.Strings) *metaReader {
	r := &metaReader{strs: s}
	r.dec = jsontext.NewDecoder(&r.src)
	return r
}

var errNotObject = errors.New("not a Kubernetes object in JSON")

// read parses data, a whole JSON object, and returns its metadata. The whole body is
// checked to be valid JSON, as a restore will decode it.
func (r *metaReader) read(data []byte) (objectMeta, error) {
	var m objectMeta
	r.src.Reset(data)
	r.dec.Reset(&r.src)
	err := r.object(func(name []byte) error {
		var err error
		switch string(name) {
		case "apiVersion":
			m.apiVersion, err = r.common()
		case "kind":
			m.kind, err = r.common()
		case "metadata":
			err = r.metadata(&m)
		default:
			err = r.dec.SkipValue()
		}
		return err
	})
	if err == nil {
		if _, err = r.dec.ReadToken(); err == nil {
			err = errors.New("more than one JSON value")
		} else if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	if err != nil {
		return objectMeta{}, fmt.Errorf("%w: %v", errNotObject, err)
	}
	return m, nil
}

func (r *metaReader) metadata(m *objectMeta) error {
	if r.dec.PeekKind() == 'n' {
		return r.dec.SkipValue()
	}
	return r.object(func(name []byte) error {
		var err error
		switch string(name) {
		case "name":
			m.name, err = r.str()
		case "namespace":
			m.namespace, err = r.common()
		case "uid":
			var s string
			s, err = r.str()
			m.uid = types.UID(s)
		case "labels":
			m.labels, err = r.pairs()
		case "annotations":
			m.annotations, err = r.pairs()
		case "ownerReferences":
			err = r.owners(m)
		default:
			err = r.dec.SkipValue()
		}
		return err
	})
}

func (r *metaReader) owners(m *objectMeta) error {
	if r.dec.PeekKind() == 'n' {
		return r.dec.SkipValue()
	}
	if err := r.expect('['); err != nil {
		return err
	}
	for r.dec.PeekKind() == '{' {
		if err := r.object(func(name []byte) error {
			if string(name) != "uid" {
				return r.dec.SkipValue()
			}
			s, err := r.str()
			m.owners = append(m.owners, types.UID(s))
			return err
		}); err != nil {
			return err
		}
	}
	return r.expect(']')
}

// pairs reads a map of strings (labels, annotations) as sorted pairs.
func (r *metaReader) pairs() (manifest.Pairs, error) {
	if r.dec.PeekKind() == 'n' {
		return nil, r.dec.SkipValue()
	}
	p := r.pairBuf[:0]
	err := r.object(func(name []byte) error {
		key := r.strs.Intern(name)
		v, err := r.str()
		p = append(p, manifest.Pair{Key: key, Value: v})
		return err
	})
	r.pairBuf = p
	if err != nil || len(p) == 0 {
		return nil, err
	}
	slices.SortFunc(p, func(a, b manifest.Pair) int { return strings.Compare(a.Key, b.Key) })
	p = slices.CompactFunc(p, func(a, b manifest.Pair) bool { return a.Key == b.Key })
	// Exactly as long as it is: append's spare capacity, a million times over, is not.
	return slices.Clone(p), nil
}

func (r *metaReader) expect(want jsontext.Kind) error {
	tok, err := r.dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != want {
		return fmt.Errorf("expected %s, found %s", want, tok.Kind())
	}
	return nil
}

// object reads an object, calling member with each name; member consumes the value.
func (r *metaReader) object(member func(name []byte) error) error {
	if err := r.expect('{'); err != nil {
		return err
	}
	for r.dec.PeekKind() == '"' {
		name, err := r.rawString()
		if err != nil {
			return err
		}
		if err := member(name); err != nil {
			return err
		}
	}
	return r.expect('}')
}

// rawString reads a JSON string and returns its unquoted bytes, valid until the next read.
func (r *metaReader) rawString() ([]byte, error) {
	v, err := r.dec.ReadValue()
	if err != nil {
		return nil, err
	}
	if v.Kind() != '"' {
		return nil, fmt.Errorf("expected a string, found %s", v.Kind())
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1], nil
	}
	r.scratch, err = jsontext.AppendUnquote(r.scratch[:0], v)
	return r.scratch, err
}

func (r *metaReader) str() (string, error) {
	b, err := r.rawString()
	return r.strs.Copy(b), err
}

func (r *metaReader) common() (string, error) {
	b, err := r.rawString()
	return r.strs.Intern(b), err
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
