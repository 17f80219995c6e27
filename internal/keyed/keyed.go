// Package keyed maps keys to values that carry their own key (a manifest's items by
// UID or by identity, a store's objects by UID or by name). A million keys in a Go map
// keyed by the key itself cost the key in every slot, strings the collector follows;
// here a slot is a 32-bit hash of the key beside the value, and the value itself says
// whose it is. The slots are one open-addressed table, seven tenths full at the size
// given to New: for a pointer, 12 bytes a slot and about 17 a value, where a Go map,
// which sizes its tables by powers of two, may leave half its slots empty
// (BenchmarkMap). A value kept under a key that is not its own (an alias) is in a Go
// map beside, keyed by the key.
package keyed

import (
	"hash/maphash"
	"iter"
	"math/bits"
)

// Map maps a key to a value. The zero value is not ready; use New. Like a Go map, it is
// not safe for concurrent writes.
type Map[K comparable, V any] struct {
	keyOf    func(V) K
	seed     maphash.Seed
	testHash func(K) uint64 // in place of maphash's, in tests
	// The table, linear probing from the slot the hash gives (home): tags[i] is the
	// hash of vals[i]'s own key, never 0; 0 marks an empty slot. There are no
	// tombstones: a deletion moves back the values after it that may move.
	tags []uint32
	vals []V
	n    int     // slots in use
	more map[K]V // aliases: values kept under a key that is not their own
}

// New returns a Map with room for n values; keyOf gives a value's own key.
func New[K comparable, V any](n int, keyOf func(V) K) *Map[K, V] {
	m := &Map[K, V]{keyOf: keyOf, seed: maphash.MakeSeed()}
	if n > 0 {
		m.alloc(n + n*3/7 + 1) // seven tenths full at n
	}
	return m
}

func (m *Map[K, V]) alloc(size int) {
	m.tags, m.vals, m.n = make([]uint32, size), make([]V, size), 0
}

// hash returns k's tag: 32 bits of its hash, never 0.
func (m *Map[K, V]) hash(k K) uint32 {
	var h uint64
	if m.testHash != nil {
		h = m.testHash(k)
	} else {
		h = maphash.Comparable(m.seed, k)
	}
	if t := uint32(h>>32) ^ uint32(h); t != 0 {
		return t
	}
	return 1
}

// home is the slot where the search for tag t starts: t scaled to the table.
func (m *Map[K, V]) home(t uint32) int { return int(uint64(t) * uint64(len(m.tags)) >> 32) }

// find returns the slot that holds k's own value and true; else the first empty slot
// from k's home, where it would go, and false (-1 when there is no table yet).
func (m *Map[K, V]) find(k K, t uint32) (int, bool) {
	if len(m.tags) == 0 {
		return -1, false
	}
	for i := m.home(t); ; {
		switch m.tags[i] {
		case 0:
			return i, false
		case t:
			if m.keyOf(m.vals[i]) == k {
				return i, true
			}
		}
		if i++; i == len(m.tags) {
			i = 0
		}
	}
}

// Get returns the value of k.
func (m *Map[K, V]) Get(k K) (V, bool) {
	if i, ok := m.find(k, m.hash(k)); ok {
		return m.vals[i], true
	}
	v, ok := m.more[k]
	return v, ok
}

// Set keeps v under k, in place of the value there. v's own key need not be k.
func (m *Map[K, V]) Set(k K, v V) {
	t := m.hash(k)
	i, found := m.find(k, t)
	switch {
	case m.keyOf(v) != k: // an alias
		if found {
			m.remove(i)
		}
		if m.more == nil {
			m.more = map[K]V{}
		}
		m.more[k] = v
	case found: // a new value of its own key
		m.vals[i] = v
	default:
		delete(m.more, k) // kept there while it was an alias
		m.insert(t, v)
	}
}

// Insert keeps v under its own key unless the key has a value already (its own, or an
// alias): it returns that value and false, else v and true. It looks the key up once,
// where Get then Set look it up twice.
func (m *Map[K, V]) Insert(v V) (V, bool) {
	k := m.keyOf(v)
	t := m.hash(k)
	i, found := m.find(k, t)
	if found {
		return m.vals[i], false
	}
	if prev, ok := m.more[k]; ok {
		return prev, false
	}
	if i < 0 || (m.n+1)*5 > len(m.tags)*4 {
		m.insert(t, v) // grows the table first
		return v, true
	}
	m.tags[i], m.vals[i] = t, v
	m.n++
	return v, true
}

// InsertAll keeps each of vals under its own key in an empty map and reports true; or,
// when two of them share a key or the map is not empty, keeps none of them and reports
// false, so that the caller can Insert them one at a time and meet the first repeat in
// its own order.
//
// The values go in by where their slots are, not in their order: a table larger than
// the cache then fills one region at a time, where a value's Insert would miss the
// cache once for its slot. A value's key is read only when its tag is met again
// (a tag is 32 bits: seldom).
func (m *Map[K, V]) InsertAll(vals []V) bool {
	if m.Len() != 0 {
		return false
	}
	n := len(vals)
	if need := n + n*3/7 + 1; len(m.tags) < need {
		m.alloc(need)
	}
	tags := make([]uint32, n)
	for i, v := range vals {
		tags[i] = m.hash(m.keyOf(v))
	}
	// A counting sort by the tags' top bits. home is monotonic in the tag, so each
	// bucket's values have their homes in one run of at most 64 slots.
	shift := 32 - bits.Len(uint(len(m.tags)/64))
	bucket := func(t uint32) uint64 { return uint64(t) >> shift }
	start := make([]int32, bucket(^uint32(0))+2)
	for _, t := range tags {
		start[bucket(t)+1]++
	}
	for b := 1; b < len(start); b++ {
		start[b] += start[b-1]
	}
	// Each value is moved beside its tag, so that the pass that places them reads
	// them in order.
	type tagged struct {
		t uint32
		v V
	}
	order := make([]tagged, n)
	for i, t := range tags {
		b := bucket(t)
		order[start[b]] = tagged{t, vals[i]}
		start[b]++
	}
	for _, o := range order {
		t, v := o.t, o.v
		j := m.home(t)
		for m.tags[j] != 0 {
			if m.tags[j] == t && m.keyOf(m.vals[j]) == m.keyOf(v) {
				m.alloc(len(m.tags))
				return false
			}
			if j++; j == len(m.tags) {
				j = 0
			}
		}
		m.tags[j], m.vals[j] = t, v
		m.n++
	}
	return true
}

// insert puts v, whose key's tag is t and is not in the table, in the first empty slot
// from its home, growing the table first when it would be over four fifths full.
func (m *Map[K, V]) insert(t uint32, v V) {
	if (m.n+1)*5 > len(m.tags)*4 {
		tags, vals := m.tags, m.vals
		m.alloc(max(2*len(tags), 8))
		for i, t := range tags {
			if t != 0 {
				m.insert(t, vals[i])
			}
		}
	}
	i := m.home(t)
	for m.tags[i] != 0 {
		if i++; i == len(m.tags) {
			i = 0
		}
	}
	m.tags[i], m.vals[i] = t, v
	m.n++
}

// remove empties slot i, moving back each value after it, up to the next empty slot,
// that may sit in the hole: one whose home is not between the hole and its slot.
func (m *Map[K, V]) remove(i int) {
	for j := i; ; {
		if j++; j == len(m.tags) {
			j = 0
		}
		t := m.tags[j]
		if t == 0 {
			break
		}
		h := m.home(t)
		if i < j && (h <= i || h > j) || i > j && h <= i && h > j {
			m.tags[i], m.vals[i] = t, m.vals[j]
			i = j
		}
	}
	var zero V
	m.tags[i], m.vals[i] = 0, zero
	m.n--
}

// Delete forgets k.
func (m *Map[K, V]) Delete(k K) {
	if i, ok := m.find(k, m.hash(k)); ok {
		m.remove(i)
		return
	}
	delete(m.more, k)
}

// Len returns the number of keys kept.
func (m *Map[K, V]) Len() int { return m.n + len(m.more) }

// All iterates every key and its value, in no order. The map may not change meanwhile.
func (m *Map[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for i, t := range m.tags {
			if t != 0 && !yield(m.keyOf(m.vals[i]), m.vals[i]) {
				return
			}
		}
		for k, v := range m.more {
			if !yield(k, v) {
				return
			}
		}
	}
}
