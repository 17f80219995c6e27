package memcluster

import (
	stdjson "encoding/json"

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
	raw        []byte        // its JSON, with apiVersion and kind; compressed with dict
	dict       *s2.Dict      // nil when raw is not compressed
	rt         *resourceType // its resource, once stored
	at         int32         // where rv goes in the JSON raw holds; -1 when it is there
	deleting   bool          // it has a deletionTimestamp
	finalizers bool          // it has finalizers
	apiVersion string
	namespace  string
	name       string
	uid        types.UID
	rv         string
	labels     labelSet // nil when it has none
	owners     []types.UID
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
// at, but its name, UID and resourceVersion (identify's); its labels shared with objects
// before it through sets, when not nil.
func describe(obj object, raw []byte, sets *labelSets) *stored {
	md := meta(obj)
	st := &stored{raw: raw, at: -1, owners: ownerUIDs(obj), deleting: metaString(obj, "deletionTimestamp") != "", finalizers: len(finalizers(obj)) > 0}
	st.apiVersion, _ = obj["apiVersion"].(string)
	st.namespace, _ = md["namespace"].(string)
	st.labels = labelsOf(obj, sets)
	return st
}

// identify sets st's name, UID and resourceVersion in one allocation, which substrings
// share: a million objects are then a million strings fewer, twice over, for the
// collector to mark. (An apiVersion and a namespace are most often shared with other
// objects.)
func (st *stored) identify(name, uid, rv string) {
	all := name + uid + rv
	st.name, st.uid, st.rv = all[:len(name)], types.UID(all[len(name):len(name)+len(uid)]), all[len(name)+len(uid):]
}

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
	out := make([]byte, 0, len(raw)+len(st.rv))
	return append(append(append(out, raw[:st.at]...), st.rv...), raw[st.at:]...)
}

// encodeUnversioned encodes obj, a created object of rt whose resourceVersion the store
// has yet to give (that needs the store's lock, and the encoding does not), and
// compresses it as rt's codec does; its labels shared through sets. st.version gives it
// its resourceVersion.
func encodeUnversioned(rt *resourceType, sets *labelSets, obj object) *stored {
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
	st := describe(obj, data, sets)
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
	if st.apiVersion == req.gvk().GroupVersion().String() {
		return stdjson.RawMessage(st.json())
	}
	return req.at(st.object())
}
