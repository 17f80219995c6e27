package memcluster

import (
	stdjson "encoding/json"
	"fmt"
	"math"
	"unique"

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
	raw  []byte        // its JSON, with apiVersion and kind; compressed with dict
	dict *s2.Dict      // nil when raw is not compressed
	rt   *resourceType // its resource, once stored
	// id is its name, UID and resourceVersion, one after the other, which name, uid
	// and rv cut out of it: one string for the collector to mark, not three, for each
	// of a million objects.
	id        string
	namespace string
	gv        unique.Handle[string] // its apiVersion
	labels    labelSet
	owners    []types.UID
	at        int32  // where rv goes in the JSON raw holds; -1 when it is there
	nameLen   uint16 // a name is at most 253 bytes (validateName)
	rvLen     uint8  // a resourceVersion is the store's, a uint64 in decimal
	// deleting: it has a deletionTimestamp; finalizers: it has finalizers.
	deleting, finalizers bool
}

// newStored encodes obj. The caller never changes obj afterwards: events share it.
func newStored(obj object) *stored {
	// encoding/json's encoding, without reflection.
	raw, err := jsontree.Marshal(obj)
	if err != nil {
		panic("memcluster: an object decoded from JSON does not encode: " + err.Error())
	}
	st := describe(obj, raw, nil)
	st.identify(metaString(obj, "name"), metaString(obj, "uid"), metaString(obj, "resourceVersion"))
	return st
}

// describe returns obj, encoded as raw, with the fields of its metadata the server looks
// at, but its name, UID and resourceVersion (identify's); its apiVersion and labels made
// canonical through c.
func describe(obj object, raw []byte, c *canonSet) *stored {
	md := meta(obj)
	st := &stored{raw: raw, at: -1, owners: ownerUIDs(obj), deleting: metaString(obj, "deletionTimestamp") != "", finalizers: len(finalizers(obj)) > 0}
	apiVersion, _ := obj["apiVersion"].(string)
	st.gv = c.handle(apiVersion)
	st.namespace, _ = md["namespace"].(string)
	st.labels = labelsOf(obj, c)
	return st
}

// identify sets st's name, UID and resourceVersion.
func (st *stored) identify(name, uid, rv string) {
	if len(name) > math.MaxUint16 || len(rv) > math.MaxUint8 {
		panic(fmt.Sprintf("memcluster: a name of %d bytes or a resourceVersion of %d stored", len(name), len(rv)))
	}
	st.id, st.nameLen, st.rvLen = name+uid+rv, uint16(len(name)), uint8(len(rv))
}

func (st *stored) name() string       { return st.id[:st.nameLen] }
func (st *stored) uid() types.UID     { return types.UID(st.id[st.nameLen : len(st.id)-int(st.rvLen)]) }
func (st *stored) rv() string         { return st.id[len(st.id)-int(st.rvLen):] }
func (st *stored) apiVersion() string { return st.gv.Value() }

// json returns st's JSON. The caller does not change it.
func (st *stored) json() []byte {
	raw := st.raw
	if st.dict != nil {
		var err error
		if raw, err = st.dict.Decode(nil, raw); err != nil {
			panic("memcluster: a stored object does not decompress: " + err.Error())
		}
	}
	if st.at < 0 {
		return raw
	}
	rv := st.rv()
	out := make([]byte, 0, len(raw)+len(rv))
	return append(append(append(out, raw[:st.at]...), rv...), raw[st.at:]...)
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
	data, dict := rt.codec.compress(raw)
	st := describe(obj, data, c)
	st.dict, st.at = dict, int32(at)
	return st
}

// version gives st, encoded from obj by encodeUnversioned, and obj resourceVersion rv,
// and returns st.
func (st *stored) version(obj object, rv string) *stored {
	meta(obj)["resourceVersion"] = rv
	st.identify(metaString(obj, "name"), metaString(obj, "uid"), rv)
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
