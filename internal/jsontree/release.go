package jsontree

import "sync"

// A decoded object is mostly small maps: each a group of eight slots (288 bytes) and its
// header, about eleven an object of an application's backup, and half of what restoring
// a million of them allocated. ObjectMaps lists the maps it makes; once the object is
// stored and let go, Maps.Release gives them back, cleared, and the objects decoded
// after it are made of them.
//
// A map of at most smallMap members fits one group; one of at most mediumMap, a table of
// two. A map is kept by how many members it holds when given back: one that has held
// more than smallMap has room for mediumMap. Larger ones are left to the collector.
const (
	smallMap  = 8
	mediumMap = 14
)

var smallMaps, mediumMaps sync.Pool

// newMap returns an empty map with room for n members: given back, or new.
func newMap(n int) map[string]any {
	switch {
	case n <= smallMap:
		if m, ok := smallMaps.Get().(map[string]any); ok {
			return m
		}
		return make(map[string]any, smallMap)
	case n <= mediumMap:
		if m, ok := mediumMaps.Get().(map[string]any); ok {
			return m
		}
		return make(map[string]any, mediumMap)
	}
	return make(map[string]any, n)
}

// Maps lists the maps a decode made (ObjectMaps), and those made for its tree since
// (Map, Copy).
type Maps struct{ made []map[string]any }

var mapLists = sync.Pool{New: func() any { return new(Maps) }}

// ObjectMaps is Object, and lists the maps it makes, for Maps.Release.
func ObjectMaps(data []byte) (map[string]any, *Maps, error) {
	ms := mapLists.Get().(*Maps)
	m, err := decode(data, ms)
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
	for _, m := range ms.made {
		switch n := len(m); {
		case n <= smallMap:
			clear(m)
			smallMaps.Put(m)
		case n <= mediumMap:
			clear(m)
			mediumMaps.Put(m)
		}
	}
	ms.Drop()
}

// Map returns an empty map with room for n members, listed in ms: a map of the tree
// made after its decode (a copy of one of its maps), given back with those. With ms
// nil, it is a new map, listed nowhere.
func (ms *Maps) Map(n int) map[string]any {
	if ms == nil {
		return make(map[string]any, n)
	}
	m := newMap(n)
	ms.made = append(ms.made, m)
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
	ms.made = ms.made[:0]
	mapLists.Put(ms)
}
