package memcluster

import (
	"context"
	"fmt"
	"time"

	"github.com/restoregraph/restoregraph/internal/jsontree"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Create creates obj in the resource gvr names, in namespace ("" for a cluster-scoped
// resource), as a POST of obj's JSON to that resource's collection would: the same
// checks, the same defaults, the same errors (an *apierrors.StatusError, as client-go
// makes of the server's Status), and the same object stored. It is for a client in this
// process that holds its objects decoded, as a restore does (restore.NewTarget finds it behind InProcessConfig):
// nothing is encoded for the request, and no answer is decoded.
//
// obj must hold what JSON decodes to (map[string]any, []any, string, bool, int64,
// float64, nil), as an unstructured object does. Create changes obj's top level and its
// metadata as the server stores it; what lies deeper it replaces where it changes it (a
// Service's cluster IP, a Job's selector), so the caller may share those values with
// other objects. On success obj is the object as created, which a read at gvr's version
// serves, and nobody may change it afterwards. On an error its top level and metadata
// may have been changed as for storing it (a uid, a generated name, defaults): a caller
// that tries again sends a copy of what it sent first.
//
// A value of obj's top level may also be the JSON of what the caller did not decode (a
// restore's jsontree.Raw): the server stores it as it is, and decodes it
// first for the kinds whose objects it reads below their metadata (Services, Jobs,
// CustomResourceDefinitions).
//
// Options.Latency delays it as it delays a request. Options.Faults do not apply: they
// are a connection's faults (429s, lost answers), and there is no connection.
func (s *Server) Create(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj map[string]any) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.handlers.Done()
	if s.opts.Latency != nil {
		t := time.NewTimer(s.opts.Latency())
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return apierrors.NewServiceUnavailable("memcluster is stopping")
		}
	}
	s.mu.Lock()
	req, err := s.collection(gvr, namespace)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if !req.rt.verbAllowed("create") {
		return apierrors.NewMethodNotSupported(req.rt.gr, "create")
	}
	if admitChanges(req.rt.gr) || req.rt.gr == crdGR {
		if err := decodeRaw(obj); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
	}
	_, err = s.createObject(&req, obj)
	return err
}

// decodeRaw replaces each value of obj's top level kept as its JSON with its tree.
func decodeRaw(obj object) error {
	for k, v := range obj {
		if raw, ok := v.(jsontree.Raw); ok {
			m, err := jsontree.Object(raw)
			if err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			obj[k] = m
		}
	}
	return nil
}

// collection is the request a POST to gvr's collection in namespace makes, by parse's
// rules. A resource served, in a namespace only when it is namespaced, is found without
// a path made and read for each of a million creates; anything else is parsed from its
// path, for the same error as a POST's. The request is a value, on the caller's stack:
// one on the heap for each create was 83 MB of a million's. The caller holds s.mu.
func (s *Server) collection(gvr schema.GroupVersionResource, namespace string) (request, error) {
	if rt, ok := s.types[gvr.GroupResource()]; ok && rt.serves(gvr.Version) && (namespace == "" || rt.namespaced) {
		return request{rt: rt, version: gvr.Version, namespace: namespace}, nil
	}
	segs := []string{"api", gvr.Version}
	if gvr.Group != "" {
		segs = []string{"apis", gvr.Group, gvr.Version}
	}
	if namespace != "" {
		segs = append(segs, "namespaces", namespace)
	}
	req, err := s.parse(append(segs, gvr.Resource))
	if err != nil {
		return request{}, err
	}
	return *req, nil
}
