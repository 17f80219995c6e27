// Package scoped is a map keyed by a scope and a name, for the millions of keys of a
// backup that share a few thousand scopes (a group-resource and a namespace, say). Each
// scope is numbered once, and a key is stored as that number and the name: a slot costs
// a number, one string and the value, where a key of four or five strings would cost
// two or three times as much, a million times over.
package scoped

import (
	"cmp"
	"iter"
	"slices"
	"strings"
)

// Map maps (scope, name) to a V. The zero value is an empty map, ready to use. Get, Len
// and All may run concurrently with each other, not with Set or Compact.
type Map[S comparable, V any] struct {
	nums   map[S]int32
	scopes []S // by number
	values map[key]V
	// compact holds the entries Compact moved out of values, sorted by key; no key is in
	// both.
	compact []entry[V]
	// appended holds the entries Append added since the last CompactMerge, in order, in
	// chunks: a slice that grows by copying, a million entries long, costs more in page
	// faults than the entries do.
	appended  [][]entry[V]
	nAppended int
	// last is the scope set last: keys tend to come scope by scope.
	last    S
	lastNum int32
}

type key struct {
	scope int32
	name  string
}

func (a key) compare(b key) int {
	if a.scope != b.scope {
		return cmp.Compare(a.scope, b.scope)
	}
	return strings.Compare(a.name, b.name)
}

type entry[V any] struct {
	key
	v V
}

// New returns a map with room for n keys.
func New[S comparable, V any](n int) *Map[S, V] {
	return &Map[S, V]{nums: map[S]int32{}, values: make(map[key]V, n)}
}

// Len returns the number of keys, not counting the appended ones before CompactMerge.
func (m *Map[S, V]) Len() int { return len(m.values) + len(m.compact) }

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
	k := key{n, name}
	if v, ok := m.values[k]; ok {
		return v, true
	}
	if i, ok := m.find(k); ok {
		return m.compact[i].v, true
	}
	var zero V
	return zero, false
}

// find returns where k is in the compacted entries.
func (m *Map[S, V]) find(k key) (int, bool) {
	if len(m.compact) == 0 {
		return 0, false
	}
	return slices.BinarySearchFunc(m.compact, k, func(e entry[V], k key) int { return e.compare(k) })
}

// Set sets the value of (scope, name).
func (m *Map[S, V]) Set(scope S, name string, v V) {
	k := key{m.num(scope), name}
	if i, ok := m.find(k); ok {
		m.compact[i].v = v
		return
	}
	if m.values == nil {
		m.values = map[key]V{}
	}
	m.values[k] = v
}

// num returns the number of scope, numbering it when it is new.
func (m *Map[S, V]) num(scope S) int32 {
	n, ok := m.lastNum, len(m.scopes) > 0 && scope == m.last
	if !ok {
		n, ok = m.nums[scope]
	}
	if !ok {
		if m.nums == nil {
			m.nums = map[S]int32{}
		}
		n = int32(len(m.scopes))
		m.nums[scope] = n
		m.scopes = append(m.scopes, scope)
	}
	m.last, m.lastNum = scope, n
	return n
}

// Append adds v under (scope, name) without looking the key up, for a map filled in one
// pass and read after it: a million keys sort in less time than they hash into a map
// that grows, and the map is compacted anyway. Get, Len and All see appended keys once
// CompactMerge has run.
func (m *Map[S, V]) Append(scope S, name string, v V) {
	if n := len(m.appended); n == 0 || len(m.appended[n-1]) == cap(m.appended[n-1]) {
		m.appended = append(m.appended, make([]entry[V], 0, appendChunk))
	}
	last := &m.appended[len(m.appended)-1]
	*last = append(*last, entry[V]{key{m.num(scope), name}, v})
	m.nAppended++
}

const appendChunk = 4096

// ReplaceLast replaces the value appended last, for a caller that knows the key again
// and the value it keeps: one entry fewer to sort. There must be one.
func (m *Map[S, V]) ReplaceLast(v V) {
	last := m.appended[len(m.appended)-1]
	last[len(last)-1].v = v
}

// CompactMerge is Compact for a map with appended keys. A key that was appended more
// than once, or set and appended, has one value kept: merge is given the value kept so
// far (the one set first) and the next one appended, in the order appended, and returns
// the one to keep. Its first error is returned and leaves the map as it was.
func (m *Map[S, V]) CompactMerge(merge func(k Key[S], kept, next V) (V, error)) error {
	if m.nAppended == 0 {
		m.Compact()
		return nil
	}
	// Each entry with its place in the order merge sees them: set keys first. They are
	// put in order of scope by counting, then sorted scope by scope: a scope's names
	// were mostly made near each other, and a sort within it reads them from the cache.
	type placed struct {
		entry[V]
		seq int
	}
	starts := make([]int, len(m.scopes)+1)
	count := func(e entry[V]) { starts[e.scope+1]++ }
	for _, e := range m.compact {
		count(e)
	}
	for k := range m.values {
		starts[k.scope+1]++
	}
	for _, chunk := range m.appended {
		for _, e := range chunk {
			count(e)
		}
	}
	for i := 1; i < len(starts); i++ {
		starts[i] += starts[i-1]
	}
	all := make([]placed, starts[len(starts)-1])
	next := slices.Clone(starts[:len(starts)-1])
	seq := 0
	put := func(e entry[V], first bool) {
		p := placed{e, -1}
		if !first {
			p.seq, seq = seq, seq+1
		}
		all[next[e.scope]] = p
		next[e.scope]++
	}
	for _, e := range m.compact {
		put(e, true)
	}
	for k, v := range m.values {
		put(entry[V]{k, v}, true)
	}
	for _, chunk := range m.appended {
		for _, e := range chunk {
			put(e, false)
		}
	}
	for sc := range m.scopes {
		slices.SortFunc(all[starts[sc]:starts[sc+1]], func(a, b placed) int {
			if c := strings.Compare(a.name, b.name); c != 0 {
				return c
			}
			return cmp.Compare(a.seq, b.seq)
		})
	}
	compact := make([]entry[V], 0, len(all))
	for _, e := range all {
		if n := len(compact); n > 0 && compact[n-1].key == e.key {
			v, err := merge(Key[S]{m.scopes[e.scope], e.name}, compact[n-1].v, e.v)
			if err != nil {
				return err
			}
			compact[n-1].v = v
			continue
		}
		compact = append(compact, e.entry)
	}
	if cap(compact)-len(compact) > len(compact)/8 { // keys merged: let the room go
		compact = slices.Clone(compact)
	}
	m.compact, m.values, m.appended, m.nAppended = compact, nil, nil, 0
	return nil
}

// Compact moves every entry into a slice sorted by key, where Get finds it by binary
// search: 40 bytes a key (for a V of 16) rather than the hash map's 60 to 100, for a
// map that is now read far more than written. Keys set later go to a map again.
func (m *Map[S, V]) Compact() {
	if len(m.values) == 0 {
		return
	}
	added := make([]entry[V], 0, len(m.values))
	for k, v := range m.values {
		added = append(added, entry[V]{k, v})
	}
	m.values = nil
	slices.SortFunc(added, func(a, b entry[V]) int { return a.compare(b.key) })
	if len(m.compact) == 0 {
		m.compact = added
		return
	}
	m.compact = append(m.compact, added...) // no key is in both: Set updates compacted keys in place
	slices.SortFunc(m.compact, func(a, b entry[V]) int { return a.compare(b.key) })
}

// All iterates every key and its value, in no order.
func (m *Map[S, V]) All() iter.Seq2[Key[S], V] {
	return func(yield func(Key[S], V) bool) {
		for k, v := range m.values {
			if !yield(Key[S]{m.scopes[k.scope], k.name}, v) {
				return
			}
		}
		for _, e := range m.compact {
			if !yield(Key[S]{m.scopes[e.scope], e.name}, e.v) {
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
