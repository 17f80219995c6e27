package memcluster

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// collectGarbage deletes objects whose ownerReferences all name UIDs that do not exist,
// once they have been orphaned for GCDelay, as kube-controller-manager's garbage
// collector does.
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

func (s *Server) gcPass(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, obj := range s.objects {
		refs, _ := meta(obj)["ownerReferences"].([]any)
		if len(refs) == 0 {
			continue
		}
		alive := false
		for _, r := range refs {
			ref, _ := r.(map[string]any)
			uid, _ := ref["uid"].(string)
			if _, ok := s.byUID[types.UID(uid)]; ok {
				alive = true
				break
			}
		}
		if alive {
			delete(s.orphanSince, k)
			continue
		}
		since, seen := s.orphanSince[k]
		if !seen {
			s.orphanSince[k] = now
			continue
		}
		if now.Sub(since) < s.opts.GCDelay {
			continue
		}
		rt, ok := s.types[k.gr]
		if !ok {
			continue
		}
		s.collected++
		s.remove(&request{rt: rt, version: rt.versions[0], namespace: k.namespace, name: k.name}, k, obj)
	}
}

// Collected returns how many objects the garbage collector has deleted.
func (s *Server) Collected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.collected
}
