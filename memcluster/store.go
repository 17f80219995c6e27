package memcluster

import (
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// key identifies a stored object.
type key struct {
	gr        schema.GroupResource
	namespace string
	name      string
}

// object is an object's content as a tree, as a write decodes it.
type object = map[string]any

// event is one change, kept in the history for watches that resume from a version.
// It holds the object as stored, its JSON: the history's ten thousand objects are not
// trees of maps for the collector to walk.
type event struct {
	typ  watch.EventType
	key  key
	st   *stored // the object after the change; for Deleted, as it was deleted
	prev *stored // for Modified: the object before the change
	rv   uint64
}

// watcher receives the events of one watch request.
type watcher struct {
	gr        schema.GroupResource
	namespace string // "" for every namespace
	name      string // from a metadata.name field selector; "" for any
	selector  labels.Selector
	ch        chan event
	overflow  bool // set when the watcher fell too far behind and was dropped
}

// view returns the event as this watcher sees it, and whether it sees it at all. As on a
// real API server, a change that makes an object match the label selector is ADDED for
// the watcher, and one that makes it stop matching is DELETED, with the object as it was.
func (w *watcher) view(e event) (event, bool) {
	if e.key.gr != w.gr || (w.namespace != "" && e.key.namespace != w.namespace) || (w.name != "" && e.key.name != w.name) {
		return e, false
	}
	cur := w.selector.Matches(e.st.labels)
	if e.typ != watch.Modified || e.prev == nil {
		return e, cur
	}
	old := w.selector.Matches(e.prev.labels)
	switch {
	case cur && old:
		return e, true
	case cur:
		e.typ = watch.Added
		return e, true
	case old:
		e.typ, e.st = watch.Deleted, e.prev
		return e, true
	}
	return e, false
}

// labelSet is an object's labels as the store keeps them: key, value, key, value, ...
// One allocation of a few strings, where a map of the same labels takes two and several
// times the memory, for each of a million objects.
type labelSet []string

// labelsOf returns obj's labels, in the order of their keys: through sets, when not
// nil, an equal set kept before, or a new one that sets then keeps.
func labelsOf(obj object, sets *labelSets) labelSet {
	md, _ := obj["metadata"].(map[string]any)
	raw, _ := md["labels"].(map[string]any)
	if len(raw) == 0 {
		return nil
	}
	if sets == nil {
		return sortedLabels(make(labelSet, 0, 2*len(raw)), raw)
	}
	return sets.intern(raw)
}

// sortedLabels appends the pairs of raw to l, in the order of their keys.
func sortedLabels(l labelSet, raw map[string]any) labelSet {
	for k, v := range raw {
		s, _ := v.(string)
		l = append(l, k, s)
		for j := len(l) - 2; j >= 2 && l[j] < l[j-2]; j -= 2 { // an insertion sort of a few pairs
			l[j], l[j+1], l[j-2], l[j-1] = l[j-2], l[j-1], l[j], l[j+1]
		}
	}
	return l
}

// labelSets keeps the label sets objects were stored with lately, so that objects with
// the same labels share one: an application's objects most often carry the same few,
// and a restore labels all it restores with its name and its backup's. A set is kept
// in one of labelSlots slots, by a hash of its pairs, until a set that hashes to the
// same slot replaces it: the memory they take is bounded however many sets there are.
type labelSets struct {
	mu      sync.Mutex
	slots   []labelSet // made on first use
	seed    maphash.Seed
	scratch labelSet
}

const labelSlots = 4096

// intern returns the labels raw holds (a metadata.labels map), as a set kept before when
// one is equal, or as a new one, which it keeps.
func (ls *labelSets) intern(raw map[string]any) labelSet {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.slots == nil {
		ls.slots, ls.seed = make([]labelSet, labelSlots), maphash.MakeSeed()
	}
	l := sortedLabels(ls.scratch[:0], raw)
	ls.scratch = l
	var h maphash.Hash
	h.SetSeed(ls.seed)
	for _, s := range l {
		h.WriteString(s)
		h.WriteByte(0)
	}
	slot := &ls.slots[h.Sum64()%labelSlots]
	if !slices.Equal(*slot, l) {
		*slot = slices.Clone(l)
	}
	return *slot
}

// Lookup returns the value of label k, and whether there is one.
func (l labelSet) Lookup(k string) (string, bool) {
	for i := 0; i+1 < len(l); i += 2 {
		if l[i] == k {
			return l[i+1], true
		}
	}
	return "", false
}

// Has reports whether there is a label k.
func (l labelSet) Has(k string) bool {
	_, ok := l.Lookup(k)
	return ok
}

// Get returns the value of label k, "" when there is none.
func (l labelSet) Get(k string) string {
	v, _ := l.Lookup(k)
	return v
}

func meta(obj object) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	return md
}

func metaString(obj object, field string) string {
	s, _ := meta(obj)[field].(string)
	return s
}

// record stores obj under k, or deletes what k holds (obj is then the object deleted,
// for the event), bumps the resourceVersion, keeps the history and tells the watchers.
// It returns what it stored. The caller holds s.mu.
func (s *Server) record(typ watch.EventType, k key, obj object) *stored {
	return s.recordStored(typ, k, newStored(obj))
}

// recordStored is record with the object encoded: for Deleted, the object deleted.
func (s *Server) recordStored(typ watch.EventType, k key, encoded *stored) *stored {
	prev, _ := s.objects.get(k)
	var st, shown *stored // what is stored, what the event shows
	if typ == watch.Deleted {
		if prev != nil {
			delete(s.byUID, prev.uid)
			if k.gr == servicesGR {
				s.alloc.release(k)
			}
			s.objects.delete(k)
			delete(s.orphanSince, k)
			s.gcWatch(k, nil, prev)
		}
		shown = encoded
	} else {
		st = encoded
		if prev == nil && k.name == st.name && k.namespace == st.namespace {
			k.name, k.namespace = st.name, st.namespace // the key keeps no strings of its own
		}
		st.rt = s.types[k.gr]
		s.objects.set(k, st)
		s.byUID[st.uid] = st
		s.gcWatch(k, st, prev)
		shown = st
	}
	e := event{typ: typ, key: k, st: shown, rv: s.rv}
	if typ == watch.Modified {
		e.prev = prev
	}
	s.history.add(e)
	for w := range s.watchers {
		seen, ok := w.view(e)
		if !ok {
			continue
		}
		select {
		case w.ch <- seen:
		default: // too far behind: drop it; its client sees the watch end and lists again
			w.overflow = true
			close(w.ch)
			delete(s.watchers, w)
		}
	}
	return st
}

// nextRV returns a new resourceVersion. The caller holds s.mu.
func (s *Server) nextRV() string {
	s.rv++
	return strconv.FormatUint(s.rv, 10)
}

// list returns the objects of gr in namespace ns ("" for all) that match, ordered by
// namespace and name.
func (s *Server) list(gr schema.GroupResource, ns, name string, sel labels.Selector) []*stored {
	if rt := s.types[gr]; name != "" && rt != nil && (ns != "" || !rt.namespaced) {
		// One object by its name (a readiness watch's field selector): looked up, not
		// found by scanning the store.
		if st, ok := s.objects.get(key{gr: gr, namespace: ns, name: name}); ok && sel.Matches(st.labels) {
			return []*stored{st}
		}
		return nil
	}
	var out []*stored
	s.objects.inResource(gr, ns, func(k key, st *stored) {
		if (name == "" || k.name == name) && sel.Matches(st.labels) {
			out = append(out, st)
		}
	})
	slices.SortFunc(out, func(a, b *stored) int {
		if c := strings.Compare(a.namespace, b.namespace); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return out
}

// ring keeps the most recent changes, oldest first, for watches that resume.
type ring struct {
	buf   []event
	start int // index of the oldest event
	n     int
}

func newRing(size int) ring { return ring{buf: make([]event, size)} }

func (r *ring) add(e event) {
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = e
		r.n++
		return
	}
	r.buf[r.start] = e
	r.start = (r.start + 1) % len(r.buf)
}

// oldest returns the resourceVersion of the oldest event kept, 0 when none is.
func (r *ring) oldest() uint64 {
	if r.n == 0 {
		return 0
	}
	return r.buf[r.start].rv
}

// each calls f for the kept events, oldest first.
func (r *ring) each(f func(event)) {
	for i := range r.n {
		f(r.buf[(r.start+i)%len(r.buf)])
	}
}
