package admission

import (
	"context"
	"slices"
	"sync"

	"github.com/restoregraph/restoregraph/manifest"
)

// Local admits operations within one process.
type Local struct {
	mu  sync.Mutex
	seq uint64
	// coarse maps a namespace and group-resource to the operations touching it: few
	// keys per operation. Only operations sharing one can conflict; their hashes are
	// then merged.
	coarse  map[coarseKey][]*entry
	waiting []*entry // in arrival order
	// OnEvent, when set, is told, under the admitter's lock and so in order, when an
	// operation is queued and when it is admitted, with its place in arrival order.
	OnEvent func(Event)
}

var (
	_ Admitter = (*Local)(nil)
	_ Idler    = (*Local)(nil)
)

// EventType says what happened to an operation.
type EventType string

const (
	Queued   EventType = "Queued"
	Admitted EventType = "Admitted"
)

// Event is a step of an operation through an admitter. Waiting lists what a queued one
// waits for.
type Event struct {
	Type    EventType
	ID      string
	Seq     uint64
	Waiting []Conflict
}

// entry is an operation in the admitter: waiting, or running once admitted.
type entry struct {
	op       Operation
	fp       footprint
	coarse   []coarseKey
	seq      uint64
	running  bool
	indexed  bool
	admitted chan struct{}
}

// Admit implements Admitter.
func (l *Local) Admit(ctx context.Context, op Operation) (func(), error) {
	l.mu.Lock()
	e := l.enter(op)
	cs := l.conflicts(e)
	l.insert(e)
	if len(cs) > 0 {
		l.waiting = append(l.waiting, e)
		l.event(Event{Type: Queued, ID: op.ID, Seq: e.seq, Waiting: cs})
	} else {
		l.admit(e)
	}
	l.mu.Unlock()
	if len(cs) > 0 && op.OnWait != nil {
		op.OnWait(cs)
	}
	select {
	case <-e.admitted:
		return func() { l.leave(e) }, nil
	case <-ctx.Done():
		l.mu.Lock()
		defer l.mu.Unlock()
		if e.running { // admitted as ctx ended: the caller gets no release, so let go here
			l.leaveLocked(e)
		} else {
			l.withdrawLocked(e)
		}
		return nil, ctx.Err()
	}
}

// TryAdmit implements Admitter.
func (l *Local) TryAdmit(_ context.Context, op Operation) (func(), []Conflict, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.enter(op)
	if cs := l.conflicts(e); len(cs) > 0 {
		return nil, cs, nil
	}
	l.insert(e)
	l.admit(e)
	return func() { l.leave(e) }, nil, nil
}

// Conflicts implements Admitter.
func (l *Local) Conflicts(_ context.Context, op Operation) ([]Conflict, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conflicts(l.enter(op)), nil
}

// Idle implements Idler: no operation is running or waiting.
func (l *Local) Idle(context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.coarse) == 0, nil
}

// enter makes the entry of a new operation, last in arrival order. The caller holds l.mu.
func (l *Local) enter(op Operation) *entry {
	l.seq++
	fp := footprintOfOp(op)
	return &entry{op: op, fp: fp, coarse: coarseKeys(fp), seq: l.seq, admitted: make(chan struct{})}
}

// insert indexes e, so that later arrivals see it. The caller holds l.mu.
func (l *Local) insert(e *entry) {
	if l.coarse == nil {
		l.coarse = map[coarseKey][]*entry{}
	}
	for _, c := range e.coarse {
		l.coarse[c] = append(l.coarse[c], e)
	}
	e.indexed = true
}

// conflicts lists the operations that arrived before e and conflict with it, running or
// waiting. The caller holds l.mu.
func (l *Local) conflicts(e *entry) []Conflict {
	seen := map[*entry]bool{}
	var out []Conflict
	for _, c := range e.coarse {
		for _, h := range l.coarse[c] {
			if seen[h] || h.seq >= e.seq {
				continue
			}
			seen[h] = true
			if shared, examples := overlap(e.fp, h.fp); shared > 0 {
				out = append(out, Conflict{ID: h.op.ID, Kind: h.op.Kind, Running: h.running, Shared: shared, Examples: examples})
			}
		}
	}
	sortConflicts(out)
	return out
}

// overlap counts the identities a and b touch in conflicting ways, by merging their
// sorted hashes, and names a few of them.
func overlap(a, b footprint) (shared int, examples []manifest.ID) {
	i, j := 0, 0
	for i < len(a.keys) && j < len(b.keys) {
		switch ka, kb := a.keys[i], b.keys[j]; {
		case ka.hash < kb.hash:
			i++
		case ka.hash > kb.hash:
			j++
		default:
			if conflicting(ka.write, kb.write) {
				shared++
				if len(examples) < maxExamples {
					examples = append(examples, a.id(i))
				}
			}
			i++
			j++
		}
	}
	return shared, examples
}

func (l *Local) admit(e *entry) {
	e.running = true
	// A running operation is only ever the earlier side of a conflict: its hashes
	// serve, not its identities (examples name the later one's). A restore of a million
	// objects lets go of them here.
	e.op.Writes, e.op.Reads, e.fp.writes, e.fp.reads = manifest.Set{}, manifest.Set{}, manifest.Set{}, manifest.Set{}
	close(e.admitted)
	l.event(Event{Type: Admitted, ID: e.op.ID, Seq: e.seq})
}

func (l *Local) event(ev Event) {
	if l.OnEvent != nil {
		l.OnEvent(ev)
	}
}

// leave ends a running operation, once; a second call does nothing.
func (l *Local) leave(e *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.running {
		l.leaveLocked(e)
	}
}

func (l *Local) leaveLocked(e *entry) {
	e.running = false
	l.remove(e)
	l.promote()
}

func (l *Local) withdrawLocked(e *entry) {
	for i, w := range l.waiting {
		if w == e {
			l.waiting = append(l.waiting[:i], l.waiting[i+1:]...)
			break
		}
	}
	l.remove(e)
	l.promote()
}

// remove takes e out of the index. The caller holds l.mu.
func (l *Local) remove(e *entry) {
	if !e.indexed {
		return
	}
	for _, c := range e.coarse {
		list := slices.DeleteFunc(l.coarse[c], func(h *entry) bool { return h == e })
		if len(list) == 0 {
			delete(l.coarse, c)
		} else {
			l.coarse[c] = list
		}
	}
	e.indexed = false
}

// promote admits, in arrival order, the waiting operations that conflict with nothing
// before them any more. The caller holds l.mu.
func (l *Local) promote() {
	kept := l.waiting[:0]
	for _, w := range l.waiting {
		if len(l.conflicts(w)) == 0 {
			l.admit(w)
			continue
		}
		kept = append(kept, w)
	}
	l.waiting = kept
}
