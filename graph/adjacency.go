package graph

// adjacency holds every node's sorted list of neighbours in one array: node u's list
// is ids[s.off : s.off+s.n], s = span[u], and kinds (when kept) is parallel to ids.
// The lists hold no pointers, so a million nodes cost the collector nothing to scan,
// and 12 bytes a node where a slice each would cost 24, three times over.
//
// The build lays the lists end to end, each with no room to spare. A list that grows
// later (AddEdge) moves to the end of the array with room to double, so that adding
// many edges to one node costs amortized constant time; the space it leaves is not
// reused.
type adjacency struct {
	span  []span
	ids   []int32
	kinds []EdgeKind // nil for lists that carry no kinds
}

// span is where one node's list lies in the array, and how far it may grow in place.
type span struct{ off, n, cap int32 }

// list returns u's neighbours. The slice is capped at its length, so that appending to
// it never writes into the next node's list.
func (a *adjacency) list(u int32) []int32 {
	s := a.span[u]
	return a.ids[s.off : s.off+s.n : s.off+s.n]
}

// kindsOf returns the kinds of u's edges, parallel to list(u).
func (a *adjacency) kindsOf(u int32) []EdgeKind {
	s := a.span[u]
	return a.kinds[s.off : s.off+s.n : s.off+s.n]
}

// addNode appends a node with an empty list.
func (a *adjacency) addNode() { a.span = append(a.span, span{off: int32(len(a.ids))}) }

// insert puts v (with kind k, when kinds are kept) at index i of u's list.
func (a *adjacency) insert(u int32, i int, v int32, k EdgeKind) {
	s := &a.span[u]
	if s.n == s.cap {
		c := max(4, 2*s.n)
		off := int32(len(a.ids))
		a.ids = append(a.ids, a.ids[s.off:s.off+s.n]...)
		a.ids = append(a.ids, make([]int32, c-s.n)...)
		if a.kinds != nil {
			a.kinds = append(a.kinds, a.kinds[s.off:s.off+s.n]...)
			a.kinds = append(a.kinds, make([]EdgeKind, c-s.n)...)
		}
		s.off, s.cap = off, c
	}
	ids := a.ids[s.off : s.off+s.n+1]
	copy(ids[i+1:], ids[i:])
	ids[i] = v
	if a.kinds != nil {
		kinds := a.kinds[s.off : s.off+s.n+1]
		copy(kinds[i+1:], kinds[i:])
		kinds[i] = k
	}
	s.n++
}
