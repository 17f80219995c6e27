package memcluster

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// watch streams events as JSON, one per line. Without a resourceVersion (or with "0",
// or sendInitialEvents) it starts with an ADDED event per existing object; with one, it
// replays the changes after it from the history, or answers 410 Gone when they are no
// longer kept.
func (s *Server) watch(w http.ResponseWriter, r *http.Request, req *request) {
	sel, name, err := selectors(r)
	if err != nil {
		writeStatus(w, err)
		return
	}
	q := r.URL.Query()
	rv, sendInitial := q.Get("resourceVersion"), q.Get("sendInitialEvents") == "true"
	wt := &watcher{gr: req.rt.gr, namespace: req.namespace, name: name, selector: sel, ch: make(chan event, 8192)}

	s.mu.Lock()
	var backlog []event
	var gone bool
	if rv == "" || rv == "0" || sendInitial {
		for _, st := range s.list(req.rt.gr, req.namespace, name, sel) {
			backlog = append(backlog, event{typ: watch.Added, st: st})
		}
	} else {
		from, err := strconv.ParseUint(rv, 10, 64)
		if err != nil {
			s.mu.Unlock()
			writeStatus(w, apierrors.NewBadRequest("resourceVersion: "+err.Error()))
			return
		}
		if from < s.rv && (s.history.n == 0 || s.history.oldest() > from+1) {
			gone = true
		}
		s.history.each(func(e event) {
			if seen, ok := wt.view(e); ok && e.rv > from {
				backlog = append(backlog, seen)
			}
		})
	}
	current := strconv.FormatUint(s.rv, 10)
	if !gone {
		s.watchers[wt] = struct{}{}
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.watchers, wt)
		s.mu.Unlock()
	}()

	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush() // the client waits for the headers before it reads events
	}
	enc := json.NewEncoder(w)
	send := func(typ watch.EventType, obj any) bool {
		if err := enc.Encode(map[string]any{"type": typ, "object": obj}); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	expired := func() {
		st := apierrors.NewResourceExpired("too old resource version").Status()
		st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		send(watch.Error, &st)
	}
	if gone {
		expired()
		return
	}
	for _, e := range backlog {
		if !send(e.typ, req.served(e.st)) {
			return
		}
	}
	if sendInitial {
		send(watch.Bookmark, map[string]any{
			"apiVersion": req.gvk().GroupVersion().String(), "kind": req.rt.kind,
			"metadata": map[string]any{"resourceVersion": current, "annotations": map[string]any{metav1.InitialEventsAnnotationKey: "true"}},
		})
	}
	var timeout <-chan time.Time
	if secs, err := strconv.Atoi(q.Get("timeoutSeconds")); err == nil && secs > 0 {
		t := time.NewTimer(time.Duration(secs) * time.Second)
		defer t.Stop()
		timeout = t.C
	}
	for {
		select {
		case e, ok := <-wt.ch:
			if !ok { // dropped for falling behind
				expired()
				return
			}
			if !send(e.typ, req.served(e.st)) {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-timeout:
			return
		}
	}
}
