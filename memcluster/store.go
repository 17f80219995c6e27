package memcluster

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unique"
	"unsafe"

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
	cur := w.selector.Matches(e.st.labelSet())
	if e.typ != watch.Modified || e.prev == nil {
		return e, cur
	}
	old := w.selector.Matches(e.prev.labelSet())
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

// labelSet is an object's labels as the store keeps them: one string of its pairs in the
// order of their keys, each key and value after its length (encodeLabels'). Objects
// with labels seen before share one, unique's (canonSet.labels); an object whose labels
// are new keeps them among its own bytes (stored.labelSet). The zero labelSet has no
// labels.
type labelSet struct{ s string }

// encodeLabels appends obj's labels to buf as a labelSet holds them.
func encodeLabels(buf []byte, obj object) []byte {
	md, _ := obj["metadata"].(map[string]any)
	raw, _ := md["labels"].(map[string]any)
	if len(raw) == 0 {
		return buf
	}
	var keysArr [16]string
	keys := keysArr[:0]
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, _ := raw[k].(string)
		buf = binary.AppendUvarint(buf, uint64(len(k)))
		buf = append(buf, k...)
		buf = binary.AppendUvarint(buf, uint64(len(v)))
		buf = append(buf, v...)
	}
	return buf
}

// canonSet makes strings canonical through unique (label sets, apiVersions), keeping
// the handles it made lately in slots, by a hash of their strings: one found there is
// returned without asking unique, whose lookup walks a tree of every string it holds, a
// cache miss a level, about a microsecond for the label sets of a million objects
// (2 s of a million-object restore), where the same labels and apiVersions come again
// and again. The zero value is ready; a nil one asks unique every time.
type canonSet struct {
	mu    sync.Mutex
	slots []unique.Handle[string] // made on first use
	seen  []uint64                // labels': a bit by the hash of each label set seen
	seed  maphash.Seed
}

// canonSlots is the slots of handles; seenBits the bits of label sets seen, about one
// in eight of them set by a million different sets.
const canonSlots, seenBits = 4096, 1 << 23

// labels returns unique's handle of the label set s (encodeLabels'), which every object
// with those labels shares; or, the first time c sees s, none, and own: the object keeps
// s among its own bytes. A set that comes once (one that names its object, as
// app.kubernetes.io/name does) so costs its bytes alone, where unique's index of it
// held as much again; one that comes again, however far apart (an application's labels
// in each of many namespaces), is shared from its second time on, its first copy kept
// beside unique's. A set is taken for seen when the bit of its hash is set, so about
// one in eight of a million different sets goes through unique all the same. A nil c
// asks unique every time.
func (c *canonSet) labels(s string) (h unique.Handle[string], own bool) {
	if c == nil {
		return unique.Make(s), false
	}
	c.mu.Lock()
	c.init()
	sum := maphash.String(c.seed, s)
	slot := &c.slots[sum%canonSlots]
	h = *slot
	bit := (sum >> 32) % seenBits
	word, mask := &c.seen[bit/64], uint64(1)<<(bit%64)
	again := *word&mask != 0
	*word |= mask
	c.mu.Unlock()
	switch {
	case h != (unique.Handle[string]{}) && h.Value() == s:
		return h, false
	case !again:
		return unique.Handle[string]{}, true
	}
	h = unique.Make(s)
	c.mu.Lock()
	*slot = h
	c.mu.Unlock()
	return h, false
}

// init makes c's slots; the caller holds c.mu.
func (c *canonSet) init() {
	if c.slots == nil {
		c.slots, c.seen, c.seed = make([]unique.Handle[string], canonSlots), make([]uint64, seenBits/64), maphash.MakeSeed()
	}
}

// handle returns unique's handle of s, which it copies when it keeps it.
func (c *canonSet) handle(s string) unique.Handle[string] {
	if c == nil {
		return unique.Make(s)
	}
	c.mu.Lock()
	c.init()
	slot := &c.slots[maphash.String(c.seed, s)%canonSlots]
	h := *slot
	c.mu.Unlock()
	if h != (unique.Handle[string]{}) && h.Value() == s {
		return h
	}
	h = unique.Make(s)
	c.mu.Lock()
	*slot = h
	c.mu.Unlock()
	return h
}

// each calls f with each label, in the order of their keys, until f returns false.
func (l labelSet) each(f func(k, v string) bool) {
	s := l.s
	for len(s) > 0 {
		var k, v string
		k, s = lengthPrefixed(s)
		v, s = lengthPrefixed(s)
		if !f(k, v) {
			return
		}
	}
}

// lengthPrefixed cuts the string after its length off the front of s.
func lengthPrefixed(s string) (string, string) {
	n, w := binary.Uvarint(unsafe.Slice(unsafe.StringData(s), len(s)))
	return s[w : w+int(n)], s[w+int(n):]
}

// Lookup returns the value of label k, and whether there is one.
func (l labelSet) Lookup(k string) (v string, found bool) {
	l.each(func(key, value string) bool {
		if key == k {
			v, found = value, true
		}
		return !found
	})
	return v, found
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
	var in *storage // a deleted object's record is the event's alone: kept in memory
	if rt := s.types[k.gr]; rt != nil && typ != watch.Deleted {
		in = rt.codec.plain
	}
	return s.recordStored(typ, k, newStored(obj, in))
}

// recordStored is record with the object encoded: for Deleted, the object deleted.
func (s *Server) recordStored(typ watch.EventType, k key, encoded *stored) *stored {
	prev, _ := s.objects.get(k)
	var st, shown *stored // what is stored, what the event shows
	if typ == watch.Deleted {
		if prev != nil {
			s.byUID.Delete(prev.uid())
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
		if k.name == st.name() && k.namespace == st.namespace() {
			k.name, k.namespace = st.name(), st.namespace() // the key keeps no strings of its own
		}
		st.rt = s.types[k.gr]
		s.objects.set(k, st)
		s.byUID.Set(st.uid(), st)
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
		if st, ok := s.objects.get(key{gr: gr, namespace: ns, name: name}); ok && sel.Matches(st.labelSet()) {
			return []*stored{st}
		}
		return nil
	}
	var out []*stored
	s.objects.inResource(gr, ns, func(k key, st *stored) {
		if (name == "" || k.name == name) && sel.Matches(st.labelSet()) {
			out = append(out, st)
		}
	})
	slices.SortFunc(out, func(a, b *stored) int {
		if c := strings.Compare(a.namespace(), b.namespace()); c != 0 {
			return c
		}
		return strings.Compare(a.name(), b.name())
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
