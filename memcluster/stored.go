package memcluster

import (
	"encoding/binary"
	stdjson "encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unique"
	"unsafe"

	"github.com/restoregraph/restoregraph/internal/jsontree"
	"k8s.io/apimachinery/pkg/types"
)

// stored is an object as the store keeps it: its JSON, which reads serve, and the few
// fields of its metadata the server itself looks at. A million objects are then a
// million byte slices, not a million trees of maps for the Go collector to walk.
//
// An object's JSON is kept without the strings of its metadata that the record holds
// anyway (its name, namespace, UID and owners' UIDs) or that the store gives it under
// its lock after encoding it (a created object's resourceVersion), and compressed once
// its resource has a dictionary (codec): json puts them together again. A UID is 36
// bytes that no dictionary compresses; an object and its owner have two.
type stored struct {
	// data is its name and UID, then its block: where its JSON leaves out what json
	// puts back (the cut table, of cutLen bytes), then its JSON, with apiVersion and
	// kind (compressed as in says). One allocation for the collector to keep, not four,
	// for each of a million objects. When in keeps blocks in a file, data holds the
	// block's place there instead (fileRef), and only the name and UID stay in memory.
	data   string
	in     *storage              // how its block is kept; nil: in data, not compressed
	rt     *resourceType         // its resource, once stored
	ns     unique.Handle[string] // its namespace; the zero Handle for none
	gv     unique.Handle[string] // its apiVersion
	labels unique.Handle[string] // its labelSet when shared; the zero Handle when in data
	owners []types.UID
	rvn    uint64 // its resourceVersion, which the store gives in decimal, when hasRV
	cutLen int32
	// nameLen: a name is at most 253 bytes (validateName); uidLen: the store gives
	// UUIDs.
	nameLen uint16
	uidLen  uint8
	flags   storedFlags
}

// storedFlags are a record's booleans, in one byte: a record is 96 bytes, not 112.
type storedFlags uint8

const (
	hasRV      storedFlags = 1 << iota // rvn is its resourceVersion
	deleting                           // it has a deletionTimestamp
	finalizing                         // it has finalizers
)

func (st *stored) has(f storedFlags) bool { return st.flags&f != 0 }

func (st *stored) set(f storedFlags, on bool) {
	if on {
		st.flags |= f
	} else {
		st.flags &^= f
	}
}

func (st *stored) deleting() bool   { return st.has(deleting) }
func (st *stored) finalizers() bool { return st.has(finalizing) }

// namespace returns its namespace, "" for a cluster-scoped object.
func (st *stored) namespace() string {
	if st.ns == (unique.Handle[string]{}) {
		return ""
	}
	return st.ns.Value()
}

// newStored encodes obj, and keeps its JSON as in says, not compressed. The caller
// never changes obj afterwards: events share it.
func newStored(obj object, in *storage) *stored {
	lbuf := scratch.Get().(*[]byte)
	defer scratch.Put(lbuf)
	st, own := describe(obj, nil, lbuf)
	st.setRV(metaString(obj, "resourceVersion"))
	buf, cuts := scratch.Get().(*[]byte), cutsPool.Get().(*[]jsontree.Cut)
	defer scratch.Put(buf)
	defer putCuts(cuts)
	name, uid := metaString(obj, "name"), metaString(obj, "uid")
	raw := st.encode(buf, cuts, obj, name, uid)
	st.identify(name, uid, own, *cuts, raw, in)
	return st
}

// The strings json puts back, in the order of metadataCuts.Names, and an owner's UID.
const (
	cutName = iota
	cutNamespace
	cutRV
	cutUID
	cutOwner
)

// metadataCuts is what the store leaves out of an object's JSON, and json puts back.
var metadataCuts = &jsontree.CutSpec{Outer: "metadata", Names: []string{"name", "namespace", "resourceVersion", "uid"}, List: "ownerReferences", Item: "uid"}

// cutsPool holds the lists of cuts an object's encoding makes.
var cutsPool = sync.Pool{New: func() any { return new([]jsontree.Cut) }}

func putCuts(cuts *[]jsontree.Cut) {
	clear(*cuts) // the pool keeps no hold of an object's strings
	cutsPool.Put(cuts)
}

// encode encodes obj, described by st (its namespace, owners and resourceVersion;
// its name and UID to come), into buf's buffer, as encoding/json does but without
// reflection, and leaves out what st puts back, which it lists in cuts for identify.
func (st *stored) encode(buf *[]byte, cuts *[]jsontree.Cut, obj object, name, uid string) []byte {
	raw, c, err := jsontree.MarshalCut((*buf)[:0], obj, metadataCuts, (*cuts)[:0])
	*buf, *cuts = raw, c
	if err != nil {
		panic("memcluster: an object decoded from JSON does not encode: " + err.Error())
	}
	if st.keep(name, uid, c) {
		raw = putBack(raw, c)
	}
	return raw
}

// putBackCut marks a cut that json could not put back as it was.
const putBackCut = -2

// keep gives each cut the kind json puts back (cutName to cutOwner), or putBackCut
// where st would not give its string back as it was: an object's metadata may say
// "007" where the store reads the resourceVersion 7, or an owner reference may have no
// UID. It reports whether any is putBackCut.
func (st *stored) keep(name, uid string, cuts []jsontree.Cut) bool {
	// The owners go back in order, all of them or none.
	ownersKept, o := true, 0
	for _, c := range cuts {
		if c.Name < 0 {
			ownersKept = ownersKept && o < len(st.owners) && string(st.owners[o]) == c.Value
			o++
		}
	}
	ownersKept = ownersKept && o == len(st.owners)
	back := false
	for i, c := range cuts {
		var ok bool
		switch c.Name {
		case cutName:
			ok = c.Value == name
		case cutNamespace:
			ok = c.Value == st.namespace()
		case cutRV:
			ok = c.Value == st.rv()
		case cutUID:
			ok = c.Value == uid
		default:
			ok, cuts[i].Name = ownersKept, cutOwner
		}
		if !ok {
			cuts[i].Name, back = putBackCut, true
		}
	}
	return back
}

// putBack returns raw with the cuts marked putBackCut put back, in a new buffer, and
// moves the others' places to match.
func putBack(raw []byte, cuts []jsontree.Cut) []byte {
	n := len(raw)
	for _, c := range cuts {
		if c.Name == putBackCut {
			n += len(c.Value)
		}
	}
	out := make([]byte, 0, n)
	prev := 0
	for i, c := range cuts {
		out = append(out, raw[prev:c.At]...)
		prev = c.At
		cuts[i].At = len(out)
		if c.Name == putBackCut {
			out = append(out, c.Value...)
		}
	}
	return append(out, raw[prev:]...)
}

// cutTable writes to b the table json reads the cuts from, and returns its length
// (with b nil, only that): for each cut not put back, in order, a uvarint of how far it
// is from the one before, shifted left by three bits, and its kind in them. It writes
// a byte at a time: a slice of v given to a Write put v on the heap, 1.5 million
// allocations in a million creates.
func cutTable(b io.ByteWriter, cuts []jsontree.Cut) int {
	var v [binary.MaxVarintLen64]byte
	n, prev := 0, 0
	for _, c := range cuts {
		if c.Name == putBackCut {
			continue
		}
		e := binary.PutUvarint(v[:], uint64(c.At-prev)<<3|uint64(c.Name))
		if b != nil {
			for _, x := range v[:e] {
				b.WriteByte(x)
			}
		}
		n, prev = n+e, c.At
	}
	return n
}

// describe returns obj with the fields of its metadata the server looks at, but its
// name, UID and resourceVersion, and without its JSON (identify's and setRV's); its
// apiVersion made canonical through c, and its labels shared through c (canonSet.labels)
// or else returned, own, encoded into buf, for identify to keep.
func describe(obj object, c *canonSet, buf *[]byte) (st *stored, own string) {
	md := meta(obj)
	st = &stored{owners: ownerUIDs(obj)}
	st.set(deleting, metaString(obj, "deletionTimestamp") != "")
	st.set(finalizing, len(finalizers(obj)) > 0)
	apiVersion, _ := obj["apiVersion"].(string)
	st.gv = c.handle(apiVersion)
	if ns, _ := md["namespace"].(string); ns != "" {
		st.ns = c.handle(ns)
	}
	*buf = encodeLabels((*buf)[:0], obj)
	if len(*buf) > 0 {
		enc := unsafe.String(&(*buf)[0], len(*buf))
		var kept bool
		if st.labels, kept = c.labels(enc); kept {
			own = enc
		}
	}
	return st, own
}

// identify sets st's name and UID, the labels it keeps itself (own, describe's), and its
// JSON, raw (as in says: compressed, in a file), with what cuts says json puts back
// (encode's); it copies them all. data holds the name, the UID, own after its length,
// then the block or its place in the file.
func (st *stored) identify(name, uid, own string, cuts []jsontree.Cut, raw []byte, in *storage) {
	if len(name) > math.MaxUint16 || len(uid) > math.MaxUint8 {
		panic(fmt.Sprintf("memcluster: a name of %d bytes or a UID of %d stored", len(name), len(uid)))
	}
	var ownLen [binary.MaxVarintLen64]byte
	head := binary.PutUvarint(ownLen[:], uint64(len(own)))
	n := cutTable(nil, cuts)
	if in.inFile() && uint64(n)+uint64(len(raw)) <= math.MaxUint32 {
		block := scratch.Get().(*[]byte)
		defer scratch.Put(block)
		*block = (*block)[:0]
		cutTable(appender{block}, cuts)
		*block = append(*block, raw...)
		if off, ok := in.file.put(*block); ok {
			var b strings.Builder
			b.Grow(len(name) + len(uid) + head + len(own) + fileRefLen)
			b.WriteString(name)
			b.WriteString(uid)
			b.Write(ownLen[:head])
			b.WriteString(own)
			var ref [fileRefLen]byte
			binary.LittleEndian.PutUint64(ref[:], uint64(off))
			binary.LittleEndian.PutUint32(ref[8:], uint32(len(*block)))
			b.Write(ref[:])
			st.data, st.nameLen, st.uidLen, st.cutLen = b.String(), uint16(len(name)), uint8(len(uid)), int32(n)
			st.in = in
			return
		}
	}
	if in.inFile() {
		in = in.inMemory // the file refused it
	}
	var b strings.Builder
	b.Grow(len(name) + len(uid) + head + len(own) + n + len(raw))
	b.WriteString(name)
	b.WriteString(uid)
	b.Write(ownLen[:head])
	b.WriteString(own)
	cutTable(&b, cuts)
	b.Write(raw)
	st.data, st.nameLen, st.uidLen, st.cutLen = b.String(), uint16(len(name)), uint8(len(uid)), int32(n)
	st.in = in
}

// appender writes to the end of a buffer.
type appender struct{ b *[]byte }

func (a appender) WriteByte(c byte) error {
	*a.b = append(*a.b, c)
	return nil
}

// fileRefLen is the length of a block's place in a data file, as data holds it: its
// offset (8 bytes) and its length (4), little-endian.
const fileRefLen = 12

// setRV sets st's resourceVersion, one the store gave or none.
func (st *stored) setRV(rv string) {
	if rv == "" {
		st.rvn = 0
		st.set(hasRV, false)
		return
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("memcluster: resourceVersion %q stored: the store gives integers", rv))
	}
	st.rvn = n
	st.set(hasRV, true)
}

func (st *stored) name() string { return st.data[:st.nameLen] }
func (st *stored) uid() types.UID {
	return types.UID(st.data[st.nameLen : int(st.nameLen)+int(st.uidLen)])
}
func (st *stored) rv() string {
	if !st.has(hasRV) {
		return ""
	}
	return strconv.FormatUint(st.rvn, 10)
}
func (st *stored) apiVersion() string { return st.gv.Value() }

// afterUID returns what data holds after the name and UID: the labels st keeps itself,
// and the rest (the block, or its place in the file).
func (st *stored) afterUID() (own, rest string) {
	rest = st.data[int(st.nameLen)+int(st.uidLen):]
	n, w := binary.Uvarint(unsafe.Slice(unsafe.StringData(rest), len(rest)))
	return rest[w : w+int(n)], rest[w+int(n):]
}

// labelSet returns its labels.
func (st *stored) labelSet() labelSet {
	if st.labels != (unique.Handle[string]{}) {
		return labelSet{st.labels.Value()}
	}
	own, _ := st.afterUID()
	return labelSet{own}
}

// block returns its cut table (cutTable's) and its JSON without what the table lists,
// compressed when st.in says so. Kept in data, they are the string's bytes, which no
// one changes; kept in a file, they are read into buf's buffer, grown as it needs.
func (st *stored) block(buf *[]byte) (table, raw []byte) {
	_, rest := st.afterUID()
	var b []byte
	if st.in.inFile() {
		ref := unsafe.Slice(unsafe.StringData(rest), fileRefLen)
		off, n := binary.LittleEndian.Uint64(ref), binary.LittleEndian.Uint32(ref[8:])
		b = st.in.file.get(buf, int64(off), int(n))
	} else {
		b = unsafe.Slice(unsafe.StringData(rest), len(rest))
	}
	return b[:st.cutLen:st.cutLen], b[st.cutLen:]
}

// json returns st's JSON. The caller does not change it.
func (st *stored) json() []byte {
	var buf *[]byte
	if st.in.inFile() {
		if st.in.dict != nil || st.cutLen > 0 {
			// What is read is decoded into another buffer: this one goes back.
			buf = scratch.Get().(*[]byte)
			defer scratch.Put(buf)
		} else {
			buf = new([]byte) // what is read is what is returned
		}
	}
	table, raw := st.block(buf)
	if st.in != nil && st.in.dict != nil {
		var err error
		if raw, err = st.in.dict.Decode(nil, raw); err != nil {
			panic("memcluster: a stored object does not decompress: " + err.Error())
		}
	}
	if len(table) == 0 {
		return raw
	}
	n := len(raw) + int(st.nameLen) + int(st.uidLen) + len(st.namespace()) + 20 // a uint64 has at most 20 digits
	for _, o := range st.owners {
		n += len(o)
	}
	out := make([]byte, 0, n)
	prev, owner := 0, 0
	for len(table) > 0 {
		v, e := binary.Uvarint(table)
		table = table[e:]
		at := prev + int(v>>3)
		out = append(out, raw[prev:at]...)
		prev = at
		switch v & 7 {
		case cutName:
			out = append(out, st.name()...)
		case cutNamespace:
			out = append(out, st.namespace()...)
		case cutRV:
			if st.has(hasRV) {
				out = strconv.AppendUint(out, st.rvn, 10)
			}
		case cutUID:
			out = append(out, st.uid()...)
		case cutOwner:
			out = append(out, st.owners[owner]...)
			owner++
		}
	}
	return append(out, raw[prev:]...)
}

// encodeUnversioned encodes obj, a created object of rt whose resourceVersion the store
// has yet to give (that needs the store's lock, and the encoding does not), and
// compresses it as rt's codec does; its apiVersion and labels made canonical through c.
// st.version gives it its resourceVersion.
func encodeUnversioned(rt *resourceType, c *canonSet, obj object) *stored {
	meta(obj)["resourceVersion"] = ""
	lbuf := scratch.Get().(*[]byte)
	defer scratch.Put(lbuf)
	st, own := describe(obj, c, lbuf)
	buf, cuts := scratch.Get().(*[]byte), cutsPool.Get().(*[]jsontree.Cut)
	defer scratch.Put(buf)
	defer putCuts(cuts)
	name, uid := metaString(obj, "name"), metaString(obj, "uid")
	raw := st.encode(buf, cuts, obj, name, uid)
	if !slices.ContainsFunc(*cuts, func(c jsontree.Cut) bool { return c.Name == cutRV }) {
		panic("memcluster: a created object has no metadata")
	}
	zbuf := scratch.Get().(*[]byte)
	defer scratch.Put(zbuf)
	data, in := rt.codec.compress(zbuf, raw)
	st.identify(name, uid, own, *cuts, data, in)
	return st
}

// version gives st, encoded from obj by encodeUnversioned, and obj resourceVersion rv,
// and returns st.
func (st *stored) version(obj object, rv string) *stored {
	meta(obj)["resourceVersion"] = rv
	st.setRV(rv)
	return st
}

// object decodes the stored JSON into a tree the caller may change.
func (st *stored) object() object {
	obj, err := jsontree.Object(st.json())
	if err != nil {
		panic("memcluster: a stored object does not decode: " + err.Error())
	}
	return obj
}

// served is st as a read of req serves it: its own JSON when req asks for the version it
// was written at (a built-in's only one, a custom resource's storage version most
// often), otherwise decoded and served at req's version.
func (req *request) served(st *stored) any {
	if st.apiVersion() == req.gvk().GroupVersion().String() {
		return stdjson.RawMessage(st.json())
	}
	return req.at(st.object())
}
