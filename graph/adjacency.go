package graph

import "math"

// adjacency holds every node's sorted list of neighbours in one array: node u's list
// is ids[s.off : s.off+s.len()], s = span[u], and kinds (when kept) is parallel to ids.
// The lists hold no pointers, so a million nodes cost the collector nothing to scan,
// and 8 bytes a node where a slice each would cost 24, three times over.
//
// The build lays the lists end to end, each with no room to spare. A list that grows
// later (AddEdge) moves to the end of the array with room to double, so that adding
// many edges to one node costs amortized constant time; the space it leaves is not
// reused. A list so moved keeps its room in the slot before it and says so by a bit of
// its length: every pass over the graph reads the spans, and at a million nodes 8 bytes
// a span rather than 12 is a third less to read from memory.
type adjacency struct {
	span  []span
	ids   []int32
	kinds []EdgeKind // nil for lists that carry no kinds
}

// span is where one node's list lies in the array: n entries from off, and, when n has
// the bit moved, room for ids[off-1] entries.
type span struct{ off, n int32 }

const moved = math.MinInt32 // the top bit of span.n

// len returns the number of entries in the list.
func (s span) len() int32 { return s.n &^ moved }

// list returns u's neighbours. The slice is capped at its length, so that appending to
// it never writes into the next node's list.
func (a *adjacency) list(u int32) []int32 {
	s := a.span[u]
	end := s.off + s.len()
	return a.ids[s.off:end:end]
}

// kindsOf returns the kinds of u's edges, parallel to list(u).
func (a *adjacency) kindsOf(u int32) []EdgeKind {
	s := a.span[u]
	end := s.off + s.len()
	return a.kinds[s.off:end:end]
}

// addNode appends a node with an empty list.
func (a *adjacency) addNode() { a.span = append(a.span, span{off: int32(len(a.ids))}) }

// insert puts v (with kind k, when kinds are kept) at index i of u's list.
func (a *adjacency) insert(u int32, i int, v int32, k EdgeKind) {
	s := &a.span[u]
	n := s.len()
	if s.n&moved == 0 || n == a.ids[s.off-1] {
		c := max(4, 2*n)
		a.ids = append(a.ids, c)
		off := int32(len(a.ids))
		a.ids = append(a.ids, a.ids[s.off:s.off+n]...)
		a.ids = append(a.ids, make([]int32, c-n)...)
		if a.kinds != nil {
			a.kinds = append(a.kinds, 0) // beside the room's slot
			a.kinds = append(a.kinds, a.kinds[s.off:s.off+n]...)
			a.kinds = append(a.kinds, make([]EdgeKind, c-n)...)
		}
		s.off = off
	}
	ids := a.ids[s.off : s.off+n+1]
	copy(ids[i+1:], ids[i:])
	ids[i] = v
	if a.kinds != nil {
		kinds := a.kinds[s.off : s.off+n+1]
		copy(kinds[i+1:], kinds[i:])
		kinds[i] = k
	}
	s.n = (n + 1) | moved
}
