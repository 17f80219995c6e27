// Package keyed maps keys to values that carry their own key (a manifest's items by
// UID or by identity, a store's objects by UID). A million keys in a Go map keyed by
// the key itself cost the key in every slot, strings the collector follows; here a
// slot's key is a 64-bit hash of the key, and the value itself says whose it is. A key
// whose hash another key in the map has, or whose value is not its own (an alias), is
// kept in a second map, keyed by the key.
package keyed

import (
	"hash/maphash"
)

// Map maps a key to a value. The zero value is not ready; use New. Like a Go map, it is
// not safe for concurrent writes.
type Map[K comparable, V any] struct {
	keyOf    func(V) K
	seed     maphash.Seed
	testHash func(K) uint64 // in place of maphash's, in tests
	// byHash holds values under their own key's hash; more, any other: a key whose
	// hash another's value holds, or whose value is another key's. A key is in one
	// or the other.
	byHash map[uint64]V
	more   map[K]V
}

// New returns a Map with room for n values; keyOf gives a value's own key.
func New[K comparable, V any](n int, keyOf func(V) K) *Map[K, V] {
	return &Map[K, V]{keyOf: keyOf, seed: maphash.MakeSeed(), byHash: make(map[uint64]V, n)}
}

func (m *Map[K, V]) hash(k K) uint64 {
	if m.testHash != nil {
		return m.testHash(k)
	}
	return maphash.Comparable(m.seed, k)
}

// Get returns the value of k.
func (m *Map[K, V]) Get(k K) (V, bool) {
	v, ok := m.byHash[m.hash(k)]
	if ok && m.keyOf(v) == k {
		return v, true
	}
	v, ok = m.more[k]
	return v, ok
}

// Set keeps v under k, in place of the value there. v's own key need not be k.
func (m *Map[K, V]) Set(k K, v V) {
	h := m.hash(k)
	held, ok := m.byHash[h]
	switch {
	case ok && m.keyOf(held) == k && m.keyOf(v) == k: // a new value of its own key
		m.byHash[h] = v
	case ok && m.keyOf(held) == k: // k now names another key's value
		delete(m.byHash, h)
		m.setMore(k, v)
	case !ok && m.keyOf(v) == k:
		m.byHash[h] = v
		delete(m.more, k) // kept there while another key held h, or as an alias
	default: // h is another key's, or v is not k's own
		m.setMore(k, v)
	}
}

func (m *Map[K, V]) setMore(k K, v V) {
	if m.more == nil {
		m.more = map[K]V{}
	}
	m.more[k] = v
}

// Delete forgets k.
func (m *Map[K, V]) Delete(k K) {
	h := m.hash(k)
	if v, ok := m.byHash[h]; ok && m.keyOf(v) == k {
		delete(m.byHash, h)
		return
	}
	delete(m.more, k)
}

// Len returns the number of keys kept.
func (m *Map[K, V]) Len() int { return len(m.byHash) + len(m.more) }
