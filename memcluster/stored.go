package memcluster

import (
	stdjson "encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unique"
	"unsafe"

	"github.com/klauspost/compress/s2"
	"github.com/restoregraph/restoregraph/internal/jsontree"
	"k8s.io/apimachinery/pkg/types"
)

// stored is an object as the store keeps it: its JSON, which reads serve, and the few
// fields of its metadata the server itself looks at. A million objects are then a
// million byte slices, not a million trees of maps for the Go collector to walk.
//
// A created object's JSON is kept without its resourceVersion, which the store gives it
// under its lock after encoding it, and compressed once its resource has a dictionary
// (codec): json puts them together again.
type stored struct {
	// data is its name and UID, then its JSON, with apiVersion and kind (compressed
	// with dict): one allocation for the collector to keep, not three, for each of a
	// million objects. name, uid and raw cut it.
	data   string
	dict   *s2.Dict              // nil when the JSON is not compressed
	rt     *resourceType         // its resource, once stored
	ns     unique.Handle[string] // its namespace; the zero Handle for none
	gv     unique.Handle[string] // its apiVersion
	labels labelSet
	owners []types.UID
	rvn    uint64 // its resourceVersion, which the store gives in decimal, when hasRV
	at     int32  // where the resourceVersion goes in the JSON raw holds; -1 when it is there
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

// newStored encodes obj. The caller never changes obj afterwards: events share it.
func newStored(obj object) *stored {
	// encoding/json's encoding, without reflection.
	raw, err := jsontree.Marshal(obj)
	if err != nil {
		panic("memcluster: an object decoded from JSON does not encode: " + err.Error())
	}
	st := describe(obj, nil)
	st.identify(metaString(obj, "name"), metaString(obj, "uid"), raw)
	st.setRV(metaString(obj, "resourceVersion"))
	return st
}

// describe returns obj with the fields of its metadata the server looks at, but its
// name, UID and resourceVersion, and without its JSON (identify's and setRV's); its
// apiVersion and labels made canonical through c.
func describe(obj object, c *canonSet) *stored {
	md := meta(obj)
	st := &stored{at: -1, owners: ownerUIDs(obj)}
	st.set(deleting, metaString(obj, "deletionTimestamp") != "")
	st.set(finalizing, len(finalizers(obj)) > 0)
	apiVersion, _ := obj["apiVersion"].(string)
	st.gv = c.handle(apiVersion)
	if ns, _ := md["namespace"].(string); ns != "" {
		st.ns = c.handle(ns)
	}
	st.labels = labelsOf(obj, c)
	return st
}

// identify sets st's name and UID, and its JSON, raw, which it copies.
func (st *stored) identify(name, uid string, raw []byte) {
	if len(name) > math.MaxUint16 || len(uid) > math.MaxUint8 {
		panic(fmt.Sprintf("memcluster: a name of %d bytes or a UID of %d stored", len(name), len(uid)))
	}
	var b strings.Builder
	b.Grow(len(name) + len(uid) + len(raw))
	b.WriteString(name)
	b.WriteString(uid)
	b.Write(raw)
	st.data, st.nameLen, st.uidLen = b.String(), uint16(len(name)), uint8(len(uid))
}

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

// raw returns the JSON data holds, compressed when dict is not nil. No one changes it:
// it is the string's bytes.
func (st *stored) raw() []byte {
	r := st.data[int(st.nameLen)+int(st.uidLen):]
	return unsafe.Slice(unsafe.StringData(r), len(r))
}

// json returns st's JSON. The caller does not change it.
func (st *stored) json() []byte {
	raw := st.raw()
	if st.dict != nil {
		var err error
		if raw, err = st.dict.Decode(nil, raw); err != nil {
			panic("memcluster: a stored object does not decompress: " + err.Error())
		}
	}
	if st.at < 0 {
		return raw
	}
	out := make([]byte, 0, len(raw)+20) // a uint64 has at most 20 digits
	return append(strconv.AppendUint(append(out, raw[:st.at]...), st.rvn, 10), raw[st.at:]...)
}

// encodeUnversioned encodes obj, a created object of rt whose resourceVersion the store
// has yet to give (that needs the store's lock, and the encoding does not), and
// compresses it as rt's codec does; its apiVersion and labels made canonical through c.
// st.version gives it its resourceVersion.
func encodeUnversioned(rt *resourceType, c *canonSet, obj object) *stored {
	meta(obj)["resourceVersion"] = ""
	buf := scratch.Get().(*[]byte)
	defer scratch.Put(buf)
	raw, at, err := jsontree.MarshalSlot((*buf)[:0], obj, "metadata", "resourceVersion")
	*buf = raw
	if err != nil {
		panic("memcluster: an object decoded from JSON does not encode: " + err.Error())
	}
	if at < 0 {
		panic("memcluster: a created object has no metadata")
	}
	zbuf := scratch.Get().(*[]byte)
	defer scratch.Put(zbuf)
	data, dict := rt.codec.compress(zbuf, raw)
	st := describe(obj, c)
	st.identify(metaString(obj, "name"), metaString(obj, "uid"), data)
	st.dict, st.at = dict, int32(at)
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
