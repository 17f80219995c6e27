package jsontree

import "sync"

// A decoded object is mostly small maps: each a group of eight slots (288 bytes) and its
// header, about eleven an object of an application's backup, and half of what restoring
// a million of them allocated. ObjectMaps lists the maps it makes; once the object is
// stored and let go, Maps.Release gives them back, cleared, and the objects decoded
// after it are made of them.
//
// A map made for at most smallMap members is one group of eight slots, without a table,
// one slot to spare: Go turns a full group into a table on any assignment, even to a
// key it holds (the embedded server's resourceVersion on a metadata of eight). One made
// for at most mediumMap is a table of two groups. A map goes back to the pool of the
// size it was made at: a table given out as a small map stays among them, cleared slot
// by slot. Before, when maps went back by what they held, 16.2 million of the 16.3
// million maps a million-object restore gave back as small were tables. A small map
// that grew past a full group is a table of two groups and goes back as one; one that
// holds a full group may be either, and is left to the collector, as are those that
// grew past mediumMap and larger ones. A small map filled, assigned to and emptied again
// would go back as small: none did in the million's restore, where none of the 14.7
// million maps that went back as small was a table.
const (
	groupSlots = 8 // a Go map's group
	smallMap   = groupSlots - 1
	mediumMap  = 14
)

var smallMaps, mediumMaps sync.Pool

// A mapSize is the size a map was made at: what Release gives it back as.
type mapSize uint8

const (
	largeMap mapSize = iota // left to the collector
	smallSize
	mediumSize
)

// newMap returns an empty map with room for n members, given back or new, and its size.
func newMap(n int) (map[string]any, mapSize) {
	switch {
	case n <= smallMap:
		if m, ok := smallMaps.Get().(map[string]any); ok {
			return m, smallSize
		}
		return make(map[string]any, smallMap), smallSize
	case n <= mediumMap:
		if m, ok := mediumMaps.Get().(map[string]any); ok {
			return m, mediumSize
		}
		return make(map[string]any, mediumMap), mediumSize
	}
	return make(map[string]any, n), largeMap
}

// Maps lists the maps a decode made (ObjectMaps), and those made for its tree since
// (Map, Copy), each with the size it was made at; and the byte slices made for it
// (Bytes).
type Maps struct {
	made  []map[string]any
	sizes []mapSize
	bytes []*[]byte
}

// byteSlices holds the byte slices Release gave back.
var byteSlices sync.Pool

// list lists m, made at size.
func (ms *Maps) list(m map[string]any, size mapSize) {
	ms.made = append(ms.made, m)
	ms.sizes = append(ms.sizes, size)
}

var mapLists = sync.Pool{New: func() any { return new(Maps) }}

// ObjectMaps is Object, and lists the maps it makes, for Maps.Release.
func ObjectMaps(data []byte) (map[string]any, *Maps, error) { return objectMaps(data, false, "") }

// ObjectMapsUnread is ObjectMaps, but for the members of the object's top level that
// are objects, metadata aside: each is kept as its JSON, a Raw, checked as ObjectMaps
// checks it but not decoded, for a caller that reads none of them and has them encoded
// by the package's encoder, encoding/json or json/v2. A Raw keeps what decoding would
// have changed: its spaces, numbers as written, invalid UTF-8, duplicate names. It is
// data's own bytes, not a copy (copying them was a sixth of what a restore of a million
// objects allocated): the caller keeps data as it is for as long as the tree, or
// anything taken from it, is used (until the maps' Release, say). The object named
// without, when not empty (a status the caller drops), is checked and left out.
func ObjectMapsUnread(data []byte, without string) (map[string]any, *Maps, error) {
	return objectMaps(data, true, without)
}

func objectMaps(data []byte, unread bool, without string) (map[string]any, *Maps, error) {
	ms := mapLists.Get().(*Maps)
	m, err := decode(data, ms, unread, without)
	if err != nil {
		ms.Drop()
		return nil, nil, err
	}
	return m, ms, nil
}

// Release gives back the maps ms lists, for the objects decoded after them, and ms
// with them. Nothing may use any of those maps again: not through the tree, nor
// through anything that took one from it (another object that shares its values, a
// step that kept one). What was put in them is left to the collector.
func (ms *Maps) Release() {
	for i, m := range ms.made {
		switch n, size := len(m), ms.sizes[i]; {
		case size == smallSize && n <= smallMap:
			clear(m)
			smallMaps.Put(m)
		case n <= mediumMap && (size == mediumSize || size == smallSize && n > groupSlots):
			clear(m)
			mediumMaps.Put(m)
		}
	}
	for _, b := range ms.bytes {
		byteSlices.Put(b)
	}
	ms.Drop()
}

// Bytes returns an empty byte slice with room for n bytes, listed in ms and given back
// with its maps: where the tree's JSON is written anew (a value left as its JSON, with
// members left out). With ms nil, it is a new slice, listed nowhere.
func (ms *Maps) Bytes(n int) []byte {
	if ms == nil {
		return make([]byte, 0, n)
	}
	b, _ := byteSlices.Get().(*[]byte)
	if b == nil {
		b = new([]byte)
	}
	if cap(*b) < n {
		*b = make([]byte, 0, n)
	}
	ms.bytes = append(ms.bytes, b)
	return (*b)[:0]
}

// Map returns an empty map with room for n members, listed in ms: a map of the tree
// made after its decode (a copy of one of its maps), given back with those. With ms
// nil, it is a new map, listed nowhere.
func (ms *Maps) Map(n int) map[string]any {
	if ms == nil {
		return make(map[string]any, n)
	}
	m, size := newMap(n)
	ms.list(m, size)
	return m
}

// Copy returns a deep copy of v, a value of a tree as Object decodes it, its maps made
// by Map; values other than maps and slices are not copied (strings, numbers and
// booleans do not change).
func (ms *Maps) Copy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		m := ms.Map(len(v))
		for k, e := range v {
			m[k] = ms.Copy(e)
		}
		return m
	case []any:
		if v == nil {
			return v
		}
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = ms.Copy(e)
		}
		return s
	}
	return v
}

// Drop gives ms back without its maps, which are left to the collector: for a tree that
// something may still hold.
func (ms *Maps) Drop() {
	clear(ms.made)
	clear(ms.bytes)
	ms.made, ms.sizes, ms.bytes = ms.made[:0], ms.sizes[:0], ms.bytes[:0]
	mapLists.Put(ms)
}
