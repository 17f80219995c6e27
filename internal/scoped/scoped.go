// Package scoped is a map keyed by a scope and a name, for the millions of keys of a
// backup that share a few thousand scopes (a group-resource and a namespace, say). Each
// scope is numbered once, and a key is stored as that number and the name: a slot costs
// a number, one string and the value, where a key of four or five strings would cost
// two or three times as much, a million times over.
package scoped

import "iter"

// Map maps (scope, name) to a V. The zero value is an empty map, ready to use. Get, Len
// and All may run concurrently with each other, not with Set.
type Map[S comparable, V any] struct {
	nums   map[S]int32
	scopes []S // by number
	values map[key]V
	// last is the scope set last: keys tend to come scope by scope.
	last    S
	lastNum int32
}

type key struct {
	scope int32
	name  string
}

// New returns a map with room for n keys.
func New[S comparable, V any](n int) *Map[S, V] {
	return &Map[S, V]{nums: map[S]int32{}, values: make(map[key]V, n)}
}

// Len returns the number of keys.
func (m *Map[S, V]) Len() int { return len(m.values) }

// Get returns the value of (scope, name).
func (m *Map[S, V]) Get(scope S, name string) (V, bool) {
	n, ok := m.lastNum, len(m.scopes) > 0 && scope == m.last
	if !ok {
		n, ok = m.nums[scope]
	}
	if !ok {
		var zero V
		return zero, false
	}
	v, ok := m.values[key{n, name}]
	return v, ok
}

// Set sets the value of (scope, name).
func (m *Map[S, V]) Set(scope S, name string, v V) {
	n, ok := m.lastNum, len(m.scopes) > 0 && scope == m.last
	if !ok {
		n, ok = m.nums[scope]
	}
	if !ok {
		if m.nums == nil {
			m.nums, m.values = map[S]int32{}, map[key]V{}
		}
		n = int32(len(m.scopes))
		m.nums[scope] = n
		m.scopes = append(m.scopes, scope)
	}
	m.last, m.lastNum = scope, n
	m.values[key{n, name}] = v
}

// All iterates every key and its value, in no order.
func (m *Map[S, V]) All() iter.Seq2[Key[S], V] {
	return func(yield func(Key[S], V) bool) {
		for k, v := range m.values {
			if !yield(Key[S]{m.scopes[k.scope], k.name}, v) {
				return
			}
		}
	}
}

// Key is a key of a Map.
type Key[S comparable] struct {
	Scope S
	Name  string
}
