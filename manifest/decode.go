package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/restoregraph/restoregraph/internal/readahead"
	"github.com/restoregraph/restoregraph/internal/strslab"
	"k8s.io/apimachinery/pkg/types"
)

// Decode reads a manifest written by Encode or EncodeGzip; gzip is detected from the
// content. Errors are *DecodeError values that name where decoding failed.
func Decode(r io.Reader) (*Manifest, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &DecodeError{Path: "(gzip header)", Err: err}
		}
		// Inflate on a second goroutine so that decompression and parsing overlap.
		ra := readahead.New(zr, 256<<10, 4)
		defer ra.Close()
		src = ra
	}
	// The decoder's own check for repeated member names keeps a set of every object's
	// names; object and pairObject check the names they read instead (an eighth of the
	// decode's CPU in a profile), and skip the values they leave.
	dec := jsontext.NewDecoder(src, jsontext.AllowDuplicateNames(true))
	d := &decoder{dec: dec, m: New(0), strs: strslab.New(1 << 20)}
	if err := d.document(); err != nil {
		return nil, err
	}
	return d.m, nil
}

// decoder reads the format token by token. It allocates items, pairs and the bytes of
// strings in slabs: a million-item manifest is then a few thousand heap objects rather
// than tens of millions, which is what keeps decoding fast and the garbage collector idle.
type decoder struct {
	dec  *jsontext.Decoder
	m    *Manifest
	path []step // where the decoder is, turned into a JSON pointer only for errors

	strs     *strslab.Strings
	scratch  []byte
	pairs    []Pair
	uids     []types.UID
	items    []Item
	pairSlab []Pair
	uidSlab  []types.UID
	types    Types

	// The last kind and resource read, and the keys of the last labels and
	// annotations read by position: items come in runs of one type, with the same
	// keys, and a string met again is then taken without a lookup.
	lastKind, lastResource string
	keys                   [2][8]string

	// The group-versions' items, added at once when the document ends (AddAll), and
	// where each run of them in one namespace's list was read, for errors.
	read []*Item
	runs []itemRun
}

// itemRun is a run of read items from one namespace's list of items: the read items
// from start on are groupVersions[gv].namespaces[ns].items[0...].
type itemRun struct{ gv, ns, start int }

// step is one level of the current position: an object member or an array index.
type step struct {
	member string
	index  int
}

func pointer(path []step) string {
	var b strings.Builder
	for _, s := range path {
		b.WriteByte('/')
		if s.member != "" {
			b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s.member))
		} else {
			b.WriteString(strconv.Itoa(s.index))
		}
	}
	return b.String()
}

func (d *decoder) fail(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return &DecodeError{Path: pointer(d.path), Offset: d.dec.InputOffset(), Err: err}
}

func (d *decoder) pop() { d.path = d.path[:len(d.path)-1] }

func (d *decoder) intern(b []byte) string { return d.strs.Intern(b) }

// rawString reads a JSON string and returns its unquoted bytes, valid until the next read.
func (d *decoder) rawString() ([]byte, error) {
	v, err := d.dec.ReadValue()
	if err != nil {
		return nil, d.fail(err)
	}
	if v.Kind() != '"' {
		return nil, d.fail(fmt.Errorf("expected a string, found %s", v.Kind()))
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1], nil
	}
	d.scratch, err = jsontext.AppendUnquote(d.scratch[:0], v)
	if err != nil {
		return nil, d.fail(err)
	}
	return d.scratch, nil
}

// str reads a string that is likely unique (a name, a UID, an annotation value).
func (d *decoder) str() (string, error) {
	b, err := d.rawString()
	if err != nil {
		return "", err
	}
	return d.slabString(b), nil
}

// common reads a string that repeats across items (kinds, resources, label keys),
// returning one shared copy.
func (d *decoder) common() (string, error) {
	b, err := d.rawString()
	if err != nil {
		return "", err
	}
	return d.intern(b), nil
}

// again reads a string that repeats across items, likely the one read into *last
// before, and returns one shared copy.
func (d *decoder) again(last *string) (string, error) {
	b, err := d.rawString()
	if err != nil {
		return "", err
	}
	return d.recent(b, last), nil
}

// recent returns b as a shared copy: *last when it is the same string, else b interned,
// kept in *last for the next time.
func (d *decoder) recent(b []byte, last *string) string {
	if string(b) != *last {
		*last = d.intern(b)
	}
	return *last
}

func (d *decoder) slabString(b []byte) string { return d.strs.Copy(b) }

func (d *decoder) expect(want jsontext.Kind) error {
	tok, err := d.dec.ReadToken()
	if err != nil {
		return d.fail(err)
	}
	if tok.Kind() != want {
		return d.fail(fmt.Errorf("expected %s, found %s", want, tok.Kind()))
	}
	return nil
}

// object reads an object, calling member with each name; member consumes the value.
// A name that comes twice is an error.
func (d *decoder) object(member func(name []byte) error) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	var names [16]string // an object of the format has fewer members than this
	var more map[string]bool
	for n := 0; d.dec.PeekKind() == '"'; n++ {
		b, err := d.rawString()
		if err != nil {
			return err
		}
		name := d.memberName(b)
		if n < len(names) {
			if slices.Contains(names[:n], name) {
				return d.fail(fmt.Errorf("duplicate member %q", name))
			}
			names[n] = name
		} else {
			if more == nil {
				more = map[string]bool{}
			}
			if more[name] || slices.Contains(names[:], name) {
				return d.fail(fmt.Errorf("duplicate member %q", name))
			}
			more[name] = true
		}
		d.path = append(d.path, step{member: name})
		if err := member(b); err != nil {
			return err
		}
		d.pop()
	}
	return d.expect('}')
}

// memberName returns b, a member's name, as a string: one of the format's own names
// without a lookup, any other interned.
func (d *decoder) memberName(b []byte) string {
	switch string(b) {
	case "group":
		return "group"
	case "version":
		return "version"
	case "namespace":
		return "namespace"
	case "kind":
		return "kind"
	case "resource":
		return "resource"
	case "name":
		return "name"
	case "uid":
		return "uid"
	case "labels":
		return "labels"
	case "annotations":
		return "annotations"
	case "ownerUIDs":
		return "ownerUIDs"
	case "items":
		return "items"
	case "namespaces":
		return "namespaces"
	}
	return d.intern(b)
}

// array reads an array, calling elem for each element.
func (d *decoder) array(elem func(i int) error) error {
	if err := d.expect('['); err != nil {
		return err
	}
	for i := 0; d.dec.PeekKind() != ']' && d.dec.PeekKind() != 0; i++ {
		d.path = append(d.path, step{index: i})
		if err := elem(i); err != nil {
			return err
		}
		d.pop()
	}
	return d.expect(']')
}

// skip reads a value the format does not know (a later version's member) and leaves
// it, a token at a time as jsontext's SkipValue does. Its objects must name each member
// once, as those the decoder reads do; the decoder does not check names itself
// (Decode), so each object's names are kept here until it closes.
func (d *decoder) skip() error {
	if k := d.dec.PeekKind(); k != '{' && k != '[' {
		if err := d.dec.SkipValue(); err != nil {
			return d.fail(err)
		}
		return nil
	}
	depth := d.dec.StackDepth()
	var open []map[string]bool // each open object's names; nil for an array
	for {
		tok, err := d.dec.ReadToken()
		if err != nil {
			return d.fail(err)
		}
		switch tok.Kind() {
		case '{':
			open = append(open, map[string]bool{})
		case '[':
			open = append(open, nil)
		case '}', ']':
			open = open[:len(open)-1]
		case '"':
			// A name makes its object's count of names and values odd.
			if kind, n := d.dec.StackIndex(d.dec.StackDepth()); kind == '{' && n%2 == 1 {
				names, name := open[len(open)-1], tok.String()
				if names[name] {
					return d.fail(fmt.Errorf("duplicate member %q", name))
				}
				names[name] = true
			}
		}
		if d.dec.StackDepth() == depth {
			return nil
		}
	}
}

func (d *decoder) document() error {
	var format string
	var pending []*Item // aliases, added once every object is in
	err := d.object(func(name []byte) error {
		switch string(name) {
		case "formatVersion":
			f, err := d.str()
			if err != nil {
				return err
			}
			if format = f; format != FormatVersion {
				return d.fail(fmt.Errorf("%w %q (this reader knows %q)", ErrUnsupportedFormat, format, FormatVersion))
			}
			return nil
		case "itemCount":
			tok, err := d.dec.ReadToken()
			if err != nil {
				return d.fail(err)
			}
			if tok.Kind() != '0' {
				return d.fail(fmt.Errorf("expected a number, found %s", tok.Kind()))
			}
			// Only a hint, and not taken: the items go into the manifest at once
			// when the document ends (AddAll), which sizes its tables by what was
			// read, where a hint of 16M made a 70-byte document reserve 808 MiB.
			return nil
		case "groupVersions":
			return d.array(func(int) error { return d.groupVersion() })
		case "resources":
			return d.array(func(int) error { return d.resource() })
		case "aliases":
			return d.array(func(int) error {
				it, t, err := d.item()
				if err == nil {
					it.Type = d.types.Of(t)
					pending = append(pending, it)
				}
				return err
			})
		default:
			return d.skip()
		}
	})
	if err != nil {
		return err
	}
	if format == "" {
		d.path = []step{{member: "formatVersion"}}
		return d.fail(errors.New("missing"))
	}
	if i, err := d.m.AddAll(d.read); err != nil {
		d.path = d.readPath(i)
		return d.fail(err)
	}
	for i, it := range pending {
		if _, err := d.m.Add(it); err != nil {
			d.path = []step{{member: "aliases"}, {index: i}}
			return d.fail(err)
		}
		if len(d.m.Aliases(it.UID)) == 0 {
			d.path = []step{{member: "aliases"}, {index: i}}
			return d.fail(fmt.Errorf("%s is no second copy of an object in the manifest", it))
		}
	}
	return nil
}

// resource reads one entry of the versions recorded per group-resource.
func (d *decoder) resource() error {
	var r Resource
	err := d.object(func(name []byte) (err error) {
		switch string(name) {
		case "group":
			r.Group, err = d.common()
		case "resource":
			r.Resource, err = d.common()
		case "preferred":
			r.Preferred, err = d.common()
		case "versions":
			err = d.array(func(int) error {
				v, err := d.common()
				r.Versions = append(r.Versions, v)
				return err
			})
		default:
			err = d.skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	if r.Resource == "" || len(r.Versions) == 0 {
		return d.fail(errors.New("a resource needs a resource name and at least one version"))
	}
	d.m.SetVersions(r.GroupResource, r.Versions, r.Preferred)
	return nil
}

type pendingItem struct {
	item      *Item
	typ       Type // its kind and resource, until its group and version are read
	ns, index int  // positions in the namespaces and items arrays, for errors
}

// readPath is the path of the read item i.
func (d *decoder) readPath(i int) []step {
	r := d.runs[sort.Search(len(d.runs), func(k int) bool { return d.runs[k].start > i })-1]
	return []step{{member: "groupVersions"}, {index: r.gv}, {member: "namespaces"}, {index: r.ns}, {member: "items"}, {index: i - r.start}}
}

// groupVersion reads one group/version. Its items take the group and version once the
// object is complete, because a writer may put them after the namespaces; they are
// added to the manifest, all at once, when the document ends.
func (d *decoder) groupVersion() error {
	var group, version string
	var items []pendingItem
	err := d.object(func(name []byte) (err error) {
		switch string(name) {
		case "group":
			group, err = d.common()
		case "version":
			version, err = d.common()
		case "namespaces":
			err = d.array(func(ns int) error { return d.namespace(ns, &items) })
		default:
			err = d.skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	gv := d.path[len(d.path)-1].index
	for _, p := range items {
		p.typ.Group, p.typ.Version = group, version
		p.item.Type = d.types.Of(p.typ)
		if p.index == 0 {
			d.runs = append(d.runs, itemRun{gv: gv, ns: p.ns, start: len(d.read)})
		}
		d.read = append(d.read, p.item)
	}
	return nil
}

func (d *decoder) namespace(nsIndex int, items *[]pendingItem) error {
	var ns string
	first := len(*items)
	err := d.object(func(name []byte) (err error) {
		switch string(name) {
		case "namespace":
			ns, err = d.common()
		case "items":
			err = d.array(func(i int) error {
				it, t, err := d.item()
				if err == nil {
					*items = append(*items, pendingItem{it, t, nsIndex, i})
				}
				return err
			})
		default:
			err = d.skip()
		}
		return err
	})
	for _, p := range (*items)[first:] {
		p.item.Namespace = ns
	}
	return err
}

// item reads an item, and returns it and its type apart: a group-version's items take
// their group and version from it (groupVersion).
func (d *decoder) item() (*Item, Type, error) {
	if len(d.items) == cap(d.items) {
		d.items = make([]Item, 0, 1024)
	}
	d.items = d.items[:len(d.items)+1]
	it := &d.items[len(d.items)-1]
	var t Type
	err := d.object(func(name []byte) (err error) {
		switch string(name) {
		case "group": // only in "aliases": items take these from their group and namespace
			t.Group, err = d.common()
		case "version":
			t.Version, err = d.common()
		case "namespace":
			it.Namespace, err = d.common()
		case "kind":
			t.Kind, err = d.again(&d.lastKind)
		case "resource":
			t.Resource, err = d.again(&d.lastResource)
		case "name":
			it.Name, err = d.str()
		case "uid":
			var s string
			s, err = d.str()
			it.UID = types.UID(s)
		case "labels":
			it.Labels, err = d.pairObject(true)
		case "annotations":
			it.Annotations, err = d.pairObject(false)
		case "ownerUIDs":
			d.uids = d.uids[:0]
			err = d.array(func(int) error {
				s, err := d.str()
				d.uids = append(d.uids, types.UID(s))
				return err
			})
			if err == nil && len(d.uids) > 0 {
				it.OwnerUIDs = d.keepUIDs(d.uids)
			}
		default:
			err = d.skip()
		}
		return err
	})
	return it, t, err
}

// pairObject reads an object of strings into sorted Pairs. Label values repeat across
// items and are interned; annotation values mostly do not. A key that comes twice is an
// error.
func (d *decoder) pairObject(commonValues bool) (Pairs, error) {
	if err := d.expect('{'); err != nil {
		return nil, err
	}
	d.pairs = d.pairs[:0]
	keys := &d.keys[0]
	if !commonValues {
		keys = &d.keys[1]
	}
	for d.dec.PeekKind() == '"' {
		b, err := d.rawString()
		if err != nil {
			return nil, err
		}
		var key string
		if i := len(d.pairs); i < len(keys) {
			key = d.recent(b, &keys[i])
		} else {
			key = d.intern(b)
		}
		d.path = append(d.path, step{member: key})
		var v string
		if commonValues {
			v, err = d.common()
		} else {
			v, err = d.str()
		}
		if err != nil {
			return nil, err
		}
		d.pairs = append(d.pairs, Pair{key, v})
		d.pop()
	}
	if err := d.expect('}'); err != nil {
		return nil, err
	}
	if len(d.pairs) == 0 {
		return nil, nil
	}
	p := Pairs(d.pairs)
	if !slices.IsSortedFunc(p, comparePairs) {
		slices.SortFunc(p, comparePairs)
	}
	for i := 1; i < len(p); i++ {
		if p[i].Key == p[i-1].Key {
			return nil, d.fail(fmt.Errorf("duplicate key %q", p[i].Key))
		}
	}
	if len(d.pairSlab)+len(p) > cap(d.pairSlab) {
		d.pairSlab = make([]Pair, 0, max(4096, len(p)))
	}
	start := len(d.pairSlab)
	d.pairSlab = append(d.pairSlab, p...)
	return d.pairSlab[start:len(d.pairSlab):len(d.pairSlab)], nil
}

func (d *decoder) keepUIDs(uids []types.UID) []types.UID {
	if len(d.uidSlab)+len(uids) > cap(d.uidSlab) {
		d.uidSlab = make([]types.UID, 0, max(4096, len(uids)))
	}
	start := len(d.uidSlab)
	d.uidSlab = append(d.uidSlab, uids...)
	return d.uidSlab[start:len(d.uidSlab):len(d.uidSlab)]
}
