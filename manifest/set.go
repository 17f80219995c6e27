package manifest

import (
	"cmp"
	"iter"
	"slices"
)

// Set is an immutable set of version-independent identities.
//
// It is a slice sorted by a 64-bit hash of each identity rather than a hash map: the
// questions admission asks of sets of a million objects — do these two intersect, what
// do they share — are then a linear merge over integers, touching strings only where two
// hashes are equal. Hash collisions cost a string comparison, never a wrong answer.
// The zero Set is empty.
type Set struct {
	entries []setEntry // sorted by hash, then by ID; no duplicates
}

type setEntry struct {
	hash uint64
	id   ID
}

// hashID is the set's hash: ID.Hash, the same in every process, so that what admission
// stores of a set (its hashes, in order) is the set's own, with no second hash and sort.
func hashID(id ID) uint64 { return id.Hash() }

func compareEntries(a, b setEntry) int {
	if c := cmp.Compare(a.hash, b.hash); c != 0 {
		return c
	}
	return a.id.Compare(b.id)
}

// NewSet returns the set of ids.
func NewSet(ids ...ID) Set { return collect(make([]setEntry, 0, len(ids)), slices.Values(ids)) }

// CollectSet returns the set of the identities ids yields, of which there are about n:
// a set of a million identities made without a slice of them first. n is room made
// ahead: a slice of a million that grows by copying costs seconds in page faults.
func CollectSet(n int, ids iter.Seq[ID]) Set { return collect(make([]setEntry, 0, n), ids) }

func collect(entries []setEntry, ids iter.Seq[ID]) Set {
	for id := range ids {
		entries = append(entries, setEntry{hashID(id), id})
	}
	return fromEntries(entries)
}

// fromEntries sorts and deduplicates entries. It sorts small keys (hash and position)
// and then gathers, which moves a fifth of the bytes that sorting the entries would.
func fromEntries(entries []setEntry) Set {
	type key struct {
		hash uint64
		pos  int
	}
	keys := make([]key, len(entries))
	for i, e := range entries {
		keys[i] = key{e.hash, i}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.hash != b.hash {
			return cmp.Compare(a.hash, b.hash)
		}
		return entries[a.pos].id.Compare(entries[b.pos].id)
	})
	sorted := make([]setEntry, 0, len(entries))
	for i, k := range keys {
		if i > 0 && k.hash == keys[i-1].hash && entries[k.pos].id == entries[keys[i-1].pos].id {
			continue
		}
		sorted = append(sorted, entries[k.pos])
	}
	return Set{entries: sorted}
}

// Set returns the identities of every item. It is computed once and cached until the
// next Add.
func (m *Manifest) Set() Set {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.set == nil {
		entries := make([]setEntry, 0, len(m.items))
		for _, it := range m.items {
			id := it.ID()
			entries = append(entries, setEntry{hashID(id), id})
		}
		for _, copies := range m.aliases { // an object is touched under every name it has
			for _, it := range copies {
				id := it.ID()
				entries = append(entries, setEntry{hashID(id), id})
			}
		}
		s := fromEntries(entries)
		m.set = &s
	}
	return *m.set
}

// Len returns the number of identities.
func (s Set) Len() int { return len(s.entries) }

// Has reports whether id is in the set.
func (s Set) Has(id ID) bool {
	_, ok := slices.BinarySearchFunc(s.entries, setEntry{hashID(id), id}, compareEntries)
	return ok
}

// merge walks both sets in order, calling both for each shared entry, onlyS and onlyO
// for entries of one side. A callback returning false stops the walk.
func (s Set) merge(o Set, both, onlyS, onlyO func(setEntry) bool) {
	a, b := s.entries, o.entries
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch c := compareEntries(a[i], b[j]); {
		case c == 0:
			if !both(a[i]) {
				return
			}
			i++
			j++
		case c < 0:
			if !onlyS(a[i]) {
				return
			}
			i++
		default:
			if !onlyO(b[j]) {
				return
			}
			j++
		}
	}
	for ; i < len(a); i++ {
		if !onlyS(a[i]) {
			return
		}
	}
	for ; j < len(b); j++ {
		if !onlyO(b[j]) {
			return
		}
	}
}

func keep(out *[]setEntry) func(setEntry) bool {
	return func(e setEntry) bool { *out = append(*out, e); return true }
}

func drop(setEntry) bool { return true }

// Intersection returns the identities in both sets.
func (s Set) Intersection(o Set) Set {
	// Written out rather than through merge: this loop is admission's hot path.
	a, b := s.entries, o.entries
	out := make([]setEntry, 0, min(len(a), len(b)))
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i].hash < b[j].hash:
			i++
		case a[i].hash > b[j].hash:
			j++
		case a[i].id == b[j].id:
			out = append(out, a[i])
			i++
			j++
		case a[i].id.Compare(b[j].id) < 0:
			i++
		default:
			j++
		}
	}
	return Set{entries: slices.Clip(out)}
}

// Intersects reports whether the sets share an identity, stopping at the first.
func (s Set) Intersects(o Set) bool {
	found := false
	stopOnShared := func(setEntry) bool { found = true; return false }
	s.merge(o, stopOnShared, drop, drop)
	return found
}

// Union returns the identities in either set.
func (s Set) Union(o Set) Set {
	out := make([]setEntry, 0, len(s.entries)+len(o.entries))
	s.merge(o, keep(&out), keep(&out), keep(&out))
	return Set{entries: out}
}

// Difference returns the identities of s that are not in o.
func (s Set) Difference(o Set) Set {
	var out []setEntry
	s.merge(o, drop, keep(&out), drop)
	return Set{entries: out}
}

// All iterates the identities in no particular order (the set's own), without the sort
// IDs does.
func (s Set) All() iter.Seq[ID] {
	return func(yield func(ID) bool) {
		for _, e := range s.entries {
			if !yield(e.id) {
				return
			}
		}
	}
}

// Hashed iterates the identities with their hashes (ID.Hash), in hash order.
func (s Set) Hashed() iter.Seq2[uint64, ID] {
	return func(yield func(uint64, ID) bool) {
		for _, e := range s.entries {
			if !yield(e.hash, e.id) {
				return
			}
		}
	}
}

// ByHash returns the set's first identity, in its order, whose hash (ID.Hash) is h.
func (s Set) ByHash(h uint64) (ID, bool) {
	i, ok := slices.BinarySearchFunc(s.entries, h, func(e setEntry, h uint64) int { return cmp.Compare(e.hash, h) })
	if !ok {
		return ID{}, false
	}
	return s.entries[i].id, true
}

// IDs returns the identities in ID.Compare order.
func (s Set) IDs() []ID {
	out := make([]ID, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.id
	}
	slices.SortFunc(out, ID.Compare)
	return out
}

// Intersect returns the identities present in both manifests: the objects that two
// operations would both touch.
func Intersect(a, b *Manifest) Set { return a.Set().Intersection(b.Set()) }
