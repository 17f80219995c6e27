package memcluster

import (
	crand "crypto/rand"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/restoregraph/restoregraph/internal/jsontree"

	"github.com/google/uuid"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

const maxBody = 3 << 20 // etcd's limit is 1.5 MiB; the API server's request limit is 3 MiB

func (req *request) key(name string) key { return key{req.rt.gr, req.namespace, name} }

func (req *request) gvk() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: req.rt.gr.Group, Version: req.version, Kind: req.rt.kind}
}

// at returns obj as served at the request's version: a shallow copy with apiVersion set.
func (req *request) at(obj object) object {
	out := make(object, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	out["apiVersion"] = req.gvk().GroupVersion().String()
	out["kind"] = req.rt.kind
	return out
}

func readObject(r *http.Request) (object, error) {
	data, err := readBody(r)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if len(data) > maxBody {
		return nil, apierrors.NewRequestEntityTooLargeError("limit is 3145728")
	}
	obj, err := jsontree.Object(data)
	if err != nil {
		return nil, apierrors.NewBadRequest("the body of the request was in an unknown format: " + err.Error())
	}
	return obj, nil
}

// readBody reads up to one byte more than maxBody of r's body: into a buffer of its
// length when the request says it, as clients do for a body they hold, so that it is
// not read into buffers twice as large, one after another.
func readBody(r *http.Request) ([]byte, error) {
	body := io.LimitReader(r.Body, maxBody+1)
	if n := r.ContentLength; n > 0 && n <= maxBody {
		buf := make([]byte, n, n+1)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil, err
		}
		// A body longer than it said is read on, to the limit.
		var one [1]byte
		if _, err := io.ReadFull(body, one[:]); err == io.EOF {
			return buf, nil
		} else if err != nil {
			return nil, err
		}
		rest, err := io.ReadAll(body)
		return append(append(buf, one[0]), rest...), err
	}
	return io.ReadAll(body)
}

// checkBody verifies the object's kind, apiVersion and namespace against the request.
func (req *request) checkBody(obj object) error {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		md = map[string]any{}
		obj["metadata"] = md
	}
	if kind, _ := obj["kind"].(string); kind != "" && kind != req.rt.kind {
		return apierrors.NewBadRequest(fmt.Sprintf("kind %q does not match the resource %s (%s)", kind, req.rt.gr, req.rt.kind))
	}
	if av, _ := obj["apiVersion"].(string); av != "" {
		if gv, err := schema.ParseGroupVersion(av); err != nil || gv != req.gvk().GroupVersion() {
			return apierrors.NewBadRequest(fmt.Sprintf("apiVersion %q does not match the request's %s", av, req.gvk().GroupVersion()))
		}
	}
	ns, _ := md["namespace"].(string)
	switch {
	case req.rt.namespaced && ns == "":
		md["namespace"] = req.namespace
	case req.rt.namespaced && ns != req.namespace:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	case !req.rt.namespaced:
		delete(md, "namespace")
	}
	return nil
}

func (req *request) invalid(name string, errs ...*field.Error) error {
	return apierrors.NewInvalid(req.gvk().GroupKind(), name, errs)
}

func (req *request) validateName(name string) error {
	// The path is made only for an error: a million valid names made a million paths.
	if name == "" {
		return req.invalid(name, field.Required(field.NewPath("metadata", "name"), "name or generateName is required"))
	}
	msgs := path.IsValidPathSegmentName(name)
	if req.rt.gr.Resource == "namespaces" {
		msgs = append(msgs, validation.IsDNS1123Label(name)...)
	} else if len(name) > 253 {
		msgs = append(msgs, "must be no more than 253 characters")
	}
	if len(msgs) > 0 {
		return req.invalid(name, field.Invalid(field.NewPath("metadata", "name"), name, strings.Join(msgs, "; ")))
	}
	return nil
}

func (s *Server) get(w http.ResponseWriter, req *request) {
	s.mu.Lock()
	st, ok := s.objects.get(req.key(req.name))
	s.mu.Unlock()
	if !ok {
		writeStatus(w, apierrors.NewNotFound(req.rt.gr, req.name))
		return
	}
	writeJSON(w, http.StatusOK, req.served(st))
}

func selectors(r *http.Request) (labels.Selector, string, error) {
	q := r.URL.Query()
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return nil, "", apierrors.NewBadRequest("labelSelector: " + err.Error())
	}
	name := ""
	if fs := q.Get("fieldSelector"); fs != "" {
		f, err := fields.ParseSelector(fs)
		if err != nil {
			return nil, "", apierrors.NewBadRequest("fieldSelector: " + err.Error())
		}
		for _, req := range f.Requirements() {
			switch {
			case req.Field == "metadata.name" && req.Operator != "!=":
				name = req.Value
			case req.Field == "metadata.namespace":
			default:
				return nil, "", apierrors.NewBadRequest(fmt.Sprintf("field selector %q is not supported", fs))
			}
		}
	}
	return sel, name, nil
}

func (s *Server) listHandler(w http.ResponseWriter, r *http.Request, req *request) {
	sel, name, err := selectors(r)
	if err != nil {
		writeStatus(w, err)
		return
	}
	page, err := parsePage(r)
	if err != nil {
		writeStatus(w, err)
		return
	}
	s.mu.Lock()
	if page.rv != 0 && (s.history.n == 0 || s.history.oldest() > page.rv+1) && page.rv < s.rv {
		s.mu.Unlock()
		writeStatus(w, apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."))
		return
	}
	objs := s.list(req.rt.gr, req.namespace, name, sel)
	listRV := s.rv
	s.mu.Unlock()
	if page.rv != 0 {
		listRV = page.rv
	}
	objs, next := page.cut(objs, listRV)
	items := make([]any, len(objs))
	for i, st := range objs {
		items[i] = req.served(st)
	}
	md := map[string]any{"resourceVersion": strconv.FormatUint(listRV, 10)}
	if next != "" {
		md["continue"] = next
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"apiVersion": req.gvk().GroupVersion().String(), "kind": req.rt.kind + "List",
		"metadata": md, "items": items,
	})
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, req *request) {
	obj, err := readObject(r)
	var st *stored
	if err == nil {
		st, err = s.createObject(req, obj)
	}
	if err != nil {
		writeStatus(w, err)
		return
	}
	writeRaw(w, http.StatusCreated, st.json())
}

// stamp is the time as a creationTimestamp holds it (RFC 3339, to the second), boxed
// for an object's map: formatted once a second, not for each of a million creates. The
// zero value is ready.
type stamp struct{ last atomic.Pointer[stampAt] }

type stampAt struct {
	sec   int64
	value any
}

// at returns now as a creationTimestamp.
func (st *stamp) at(now time.Time) any {
	if last := st.last.Load(); last != nil && last.sec == now.Unix() {
		return last.value
	}
	next := &stampAt{sec: now.Unix(), value: now.UTC().Format(time.RFC3339)}
	st.last.Store(next)
	return next.value
}

// newUID returns a random (version 4) UUID, as the API server gives a created object.
// uuid.NewString reads its 16 bytes through an io.Reader, which puts them on the heap:
// a million allocations in a million creates. Read here, they stay on the stack.
func newUID() string {
	var u uuid.UUID
	_, _ = crand.Read(u[:]) // crypto/rand's Read does not fail
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122's variant
	return u.String()
}

// createObject creates obj, decoded from a create's body, as req asks: it checks obj
// against the request, sets what the server sets and stores it. obj is then the object
// as stored. An error is an *apierrors.StatusError, as the request is answered with.
func (s *Server) createObject(req *request, obj object) (*stored, error) {
	if err := req.checkBody(obj); err != nil {
		return nil, err
	}
	md := meta(obj)
	name, _ := md["name"].(string)
	if gen, _ := md["generateName"].(string); name == "" && gen != "" {
		name = gen + rand.String(5)
		md["name"] = name
	}
	if err := req.validateName(name); err != nil {
		return nil, err
	}
	if err := s.validateKind(req, obj); err != nil {
		return nil, err
	}
	// What the server sets that needs not its lock, and the encoding, which is most
	// of a create's work, unless admission changes the object under the lock.
	md["uid"] = newUID()
	md["creationTimestamp"] = s.now.at(time.Now())
	if req.rt.generation {
		md["generation"] = int64(1)
	} else {
		delete(md, "generation")
	}
	for _, f := range []string{"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "managedFields"} {
		delete(md, f)
	}
	if req.rt.status {
		delete(obj, "status")
	}
	if req.rt.gr.Resource == "namespaces" && req.rt.gr.Group == "" {
		obj["status"] = map[string]any{"phase": "Active"}
	}
	obj["apiVersion"], obj["kind"] = req.rt.identity(req.version)
	early := !admitChanges(req.rt.gr)
	var enc *stored
	if early {
		enc = encodeUnversioned(req.rt, &s.canon, obj)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if req.rt.namespaced {
		nsObj, ok := s.objects.get(key{schema.GroupResource{Resource: "namespaces"}, "", req.namespace})
		if !ok {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, req.namespace)
		}
		if nsObj.deleting() {
			return nil, apierrors.NewForbidden(req.rt.gr, name, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", req.namespace))
		}
	}
	k := req.key(name)
	if _, exists := s.objects.get(k); exists {
		return nil, apierrors.NewAlreadyExists(req.rt.gr, name)
	}
	if err := s.admit(req, k, obj); err != nil {
		return nil, err
	}
	if !early {
		enc = encodeUnversioned(req.rt, &s.canon, obj) // as admission left it
	}
	st := s.recordStored(watch.Added, k, enc.version(obj, s.nextRV()))
	s.afterWrite(req, obj)
	return st, nil
}

// validateKind applies the few rules memcluster checks beyond metadata.
func (s *Server) validateKind(req *request, obj object) error {
	if req.rt.gr == crdGR {
		return validateCRD(req, obj)
	}
	return nil
}

func (s *Server) update(w http.ResponseWriter, r *http.Request, req *request) {
	obj, err := readObject(r)
	if err == nil {
		err = req.checkBody(obj)
	}
	if err == nil && metaString(obj, "name") != req.name {
		err = apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", metaString(obj, "name"), req.name))
	}
	if err == nil {
		err = s.validateKind(req, obj)
	}
	if err != nil {
		writeStatus(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out, err := s.replace(req, obj)
	if err != nil {
		writeStatus(w, err)
		return
	}
	writeRaw(w, http.StatusOK, out.json())
}

// replace stores obj over the existing object, as an update of the resource or of its
// status subresource, and returns it (at req's version). The caller holds s.mu.
func (s *Server) replace(req *request, obj object) (*stored, error) {
	k := req.key(req.name)
	oldSt, ok := s.objects.get(k)
	if !ok {
		return nil, apierrors.NewNotFound(req.rt.gr, req.name)
	}
	old := oldSt.object()
	md, oldMD := meta(obj), meta(old)
	if rv := metaString(obj, "resourceVersion"); rv != "" && rv != metaString(old, "resourceVersion") {
		return nil, apierrors.NewConflict(req.rt.gr, req.name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	if uid := metaString(obj, "uid"); uid != "" && uid != metaString(old, "uid") {
		return nil, apierrors.NewConflict(req.rt.gr, req.name, fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", metaString(old, "uid"), uid))
	}
	if req.subresource == "status" {
		// Only status changes: everything else is the stored object's.
		old["status"] = obj["status"] // old is this request's own copy
		obj, md = old, oldMD
	} else {
		if req.rt.gr == podsGR {
			if err := podUpdateForbidden(req.name, old, obj); err != nil {
				return nil, err
			}
		}
		for _, f := range []string{"uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds"} {
			if v, ok := oldMD[f]; ok {
				md[f] = v
			} else {
				delete(md, f)
			}
		}
		if req.rt.status {
			if st, ok := old["status"]; ok {
				obj["status"] = st
			} else {
				delete(obj, "status")
			}
		}
		if req.rt.generation && specChanged(old, obj) {
			g, _ := oldMD["generation"].(int64)
			md["generation"] = g + 1
		}
	}
	md["resourceVersion"] = s.nextRV()
	obj["apiVersion"], obj["kind"] = req.rt.identity(req.version)
	if metaString(obj, "deletionTimestamp") != "" && len(finalizers(obj)) == 0 {
		s.record(watch.Deleted, k, obj)
		s.afterDelete(req, obj)
		return newStored(obj, nil), nil
	}
	st := s.record(watch.Modified, k, obj)
	s.afterWrite(req, obj)
	return st, nil
}

// specChanged reports whether anything but metadata and status differs.
func specChanged(a, b object) bool {
	for k, v := range a {
		if k != "metadata" && k != "status" && k != "apiVersion" && k != "kind" && !reflect.DeepEqual(v, b[k]) {
			return true
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok && k != "metadata" && k != "status" && k != "apiVersion" && k != "kind" {
			return true
		}
	}
	return false
}

func finalizers(obj object) []any {
	f, _ := meta(obj)["finalizers"].([]any)
	return f
}

func (s *Server) patch(w http.ResponseWriter, r *http.Request, req *request) {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		writeStatus(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	ct := r.Header.Get("Content-Type")
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.objects.get(req.key(req.name))
	if !ok {
		writeStatus(w, apierrors.NewNotFound(req.rt.gr, req.name))
		return
	}
	current := old.json()
	if old.apiVersion() != req.gvk().GroupVersion().String() {
		current, _ = json.Marshal(req.at(old.object()))
	}
	var patched []byte
	switch types.PatchType(ct) {
	case types.MergePatchType:
		patched, err = jsonpatch.MergePatch(current, data)
	case types.JSONPatchType:
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(data); err == nil {
			patched, err = p.Apply(current)
		}
	default:
		writeJSON(w, http.StatusUnsupportedMediaType, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
			Message: fmt.Sprintf("the patch type %q is not supported by memcluster; use a JSON merge patch or a JSON patch", ct)})
		return
	}
	if err != nil {
		writeStatus(w, apierrors.NewBadRequest("the patch could not be applied: "+err.Error()))
		return
	}
	var obj object
	if err := json.Unmarshal(patched, &obj); err != nil {
		writeStatus(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	if err := req.checkBody(obj); err != nil {
		writeStatus(w, err)
		return
	}
	if err := s.validateKind(req, obj); err != nil {
		writeStatus(w, err)
		return
	}
	out, err := s.replace(req, obj)
	if err != nil {
		writeStatus(w, err)
		return
	}
	writeRaw(w, http.StatusOK, out.json())
}

func (s *Server) deleteHandler(w http.ResponseWriter, r *http.Request, req *request) {
	var opts metav1.DeleteOptions
	if data, _ := io.ReadAll(io.LimitReader(r.Body, maxBody)); len(data) > 0 {
		if err := json.Unmarshal(data, &opts); err != nil {
			writeStatus(w, apierrors.NewBadRequest(err.Error()))
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := req.key(req.name)
	st, ok := s.objects.get(k)
	if !ok {
		writeStatus(w, apierrors.NewNotFound(req.rt.gr, req.name))
		return
	}
	if p := opts.Preconditions; p != nil {
		if p.UID != nil && *p.UID != st.uid() || p.ResourceVersion != nil && *p.ResourceVersion != st.rv() {
			writeStatus(w, apierrors.NewConflict(req.rt.gr, req.name, fmt.Errorf("precondition failed")))
			return
		}
	}
	s.remove(req, k, st)
	writeJSON(w, http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess,
		Details: &metav1.StatusDetails{Name: req.name, Group: req.rt.gr.Group, Kind: req.rt.gr.Resource, UID: st.uid()}})
}

// remove deletes an object, or marks it deleting when finalizers or a namespace's
// contents hold it. The caller holds s.mu.
func (s *Server) remove(req *request, k key, st *stored) {
	isNamespace := k.gr == schema.GroupResource{Resource: "namespaces"}
	if !st.finalizers() && !isNamespace {
		// The record is the object as it was deleted, which the event shows: its JSON is
		// not decoded and encoded again (a data file's blocks are never reused, so the
		// record stays good once out of the store). Only a CRD is decoded, for the
		// resource it served.
		s.recordStored(watch.Deleted, k, st)
		if k.gr == crdGR {
			s.afterDelete(req, st.object())
		}
		return
	}
	if st.deleting() {
		return
	}
	marked := st.object()
	md := meta(marked) // every stored object has its metadata: create and update set it
	md["deletionTimestamp"] = time.Now().UTC().Format(time.RFC3339)
	md["deletionGracePeriodSeconds"] = int64(0)
	md["resourceVersion"] = s.nextRV()
	if isNamespace {
		marked["status"] = map[string]any{"phase": "Terminating"}
	}
	s.record(watch.Modified, k, marked)
	if isNamespace {
		s.terminateNamespace(k.name)
	}
}
