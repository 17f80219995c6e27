// Package uidmap maps Kubernetes UIDs to values that carry their own UID (a manifest's
// items, a store's objects). A million UIDs in a Go map keyed by the UID's string cost
// a 16-byte key a slot, which points at the string, for the collector to follow; here a
// slot's key is a 64-bit hash of the UID, and the value itself says whose it is. A UID
// whose hash another UID in the map has is kept in a second map, keyed by the UID.
package uidmap

import (
	"hash/maphash"

	"k8s.io/apimachinery/pkg/types"
)

// Map maps a UID to the value whose UID it is. The zero value is not ready; use New.
// Like a Go map, it is not safe for concurrent writes.
type Map[V any] struct {
	uid      func(V) types.UID
	seed     maphash.Seed
	testHash func(types.UID) uint64 // in place of maphash's, in tests
	byHash   map[uint64]V
	more     map[types.UID]V // the UIDs whose hash is another's in byHash
}

// New returns a Map with room for n values; uid gives a value's UID.
func New[V any](n int, uid func(V) types.UID) *Map[V] {
	return &Map[V]{uid: uid, seed: maphash.MakeSeed(), byHash: make(map[uint64]V, n)}
}

func (m *Map[V]) hash(u types.UID) uint64 {
	if m.testHash != nil {
		return m.testHash(u)
	}
	return maphash.String(m.seed, string(u))
}

// Get returns the value of u.
func (m *Map[V]) Get(u types.UID) (V, bool) {
	v, ok := m.byHash[m.hash(u)]
	if ok && m.uid(v) == u {
		return v, true
	}
	v, ok = m.more[u]
	return v, ok
}

// Set keeps v under its UID, in place of the value there.
func (m *Map[V]) Set(v V) {
	u := m.uid(v)
	h := m.hash(u)
	if prev, ok := m.byHash[h]; ok && m.uid(prev) != u {
		if m.more == nil {
			m.more = map[types.UID]V{}
		}
		m.more[u] = v
		return
	}
	m.byHash[h] = v
	delete(m.more, u) // kept there while another UID held h
}

// Delete forgets u.
func (m *Map[V]) Delete(u types.UID) {
	h := m.hash(u)
	if v, ok := m.byHash[h]; ok && m.uid(v) == u {
		delete(m.byHash, h)
		return
	}
	delete(m.more, u)
}

// Len returns the number of UIDs kept.
func (m *Map[V]) Len() int { return len(m.byHash) + len(m.more) }
