package memcluster

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// collectGarbage deletes objects whose ownerReferences all name UIDs that do not exist,
// once they have been orphaned for GCDelay, as kube-controller-manager's garbage
// collector does. Like it, it works from changes, not by scanning the store: an object
// becomes a candidate when it is stored with no owner alive, or when an owner of it is
// deleted (gcWatch), and a pass looks at the candidates alone.
func (s *Server) collectGarbage() {
	defer s.tasks.Done()
	t := time.NewTicker(max(s.opts.GCDelay/2, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case now := <-t.C:
			s.gcPass(now)
		}
	}
}

// gcWatch keeps the garbage collector's index as the object k is stored (st, over old
// when it replaces one) or deleted (st nil, old the object deleted). The caller holds
// s.mu.
func (s *Server) gcWatch(k key, st, old *stored) {
	if !s.opts.GC {
		return
	}
	if st == nil {
		for _, dep := range s.dependents[old.uid()] {
			if d, ok := s.byUID.Get(dep); ok {
				if _, seen := s.orphanSince[d.key()]; !seen {
					s.orphanSince[d.key()] = time.Now()
				}
			}
		}
		delete(s.dependents, old.uid())
		return
	}
	if len(st.owners) == 0 {
		return
	}
	alive := false
	for i, o := range st.owners {
		if owner, ok := s.byUID.Get(o); ok {
			alive = true
			// The owner's own string, which its record keeps anyway: the one in st's
			// JSON, made for st by its client, is let go (a million objects' owners).
			o = owner.uid()
			st.owners[i] = o
		}
		if old == nil || !slices.Contains(old.owners, o) {
			// st's UID is cut from its record: an update of st leaves the entry
			// holding the record it replaced, until the owner goes.
			s.dependents[o] = append(s.dependents[o], st.uid())
		}
	}
	if _, seen := s.orphanSince[k]; !alive && !seen {
		s.orphanSince[k] = time.Now()
	}
}

// gcPass deletes the candidates orphaned for GCDelay, and forgets those that have an
// owner again or are gone.
func (s *Server) gcPass(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, since := range s.orphanSince {
		st, ok := s.objects.get(k)
		if !ok || s.ownerAlive(st) {
			delete(s.orphanSince, k)
			continue
		}
		if now.Sub(since) < s.opts.GCDelay {
			continue
		}
		rt, ok := s.types[k.gr]
		if !ok {
			delete(s.orphanSince, k)
			continue
		}
		s.collected++
		s.remove(&request{rt: rt, version: rt.versions[0], namespace: k.namespace, name: k.name}, k, st)
	}
}

// ownerAlive says whether st has no ownerReferences or one of them names an object
// that exists.
func (s *Server) ownerAlive(st *stored) bool {
	for _, o := range st.owners {
		if _, ok := s.byUID.Get(o); ok {
			return true
		}
	}
	return len(st.owners) == 0
}

func ownerUIDs(obj object) []types.UID {
	refs, _ := meta(obj)["ownerReferences"].([]any)
	if len(refs) == 0 {
		return nil
	}
	out := make([]types.UID, 0, len(refs))
	for _, r := range refs {
		ref, _ := r.(map[string]any)
		if uid, _ := ref["uid"].(string); uid != "" {
			out = append(out, types.UID(uid))
		}
	}
	return out
}

// Collected returns how many objects the garbage collector has deleted.
func (s *Server) Collected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.collected
}
