package memcluster

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/restoregraph/restoregraph/manifest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

var crdGR = manifest.CRDGroupResource

func toCRD(obj object) (*apiextv1.CustomResourceDefinition, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	crd := &apiextv1.CustomResourceDefinition{}
	return crd, json.Unmarshal(data, crd)
}

// validateCRD checks what serving a CRD depends on.
func validateCRD(req *request, obj object) error {
	crd, err := toCRD(obj)
	if err != nil {
		return req.invalid(metaString(obj, "name"), field.Invalid(field.NewPath("spec"), "", err.Error()))
	}
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if crd.Spec.Group == "" {
		errs = append(errs, field.Required(spec.Child("group"), ""))
	}
	if crd.Spec.Names.Plural == "" || crd.Spec.Names.Kind == "" {
		errs = append(errs, field.Required(spec.Child("names"), "plural and kind are required"))
	}
	for _, n := range []struct{ field, value string }{{"plural", crd.Spec.Names.Plural}, {"singular", crd.Spec.Names.Singular}} {
		if n.value == "" {
			continue
		}
		if msgs := validation.IsDNS1035Label(n.value); len(msgs) > 0 {
			errs = append(errs, field.Invalid(spec.Child("names", n.field), n.value, strings.Join(msgs, "; ")))
		}
	}
	if want := crd.Spec.Names.Plural + "." + crd.Spec.Group; crd.Name != want {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), crd.Name, "must be spec.names.plural+\".\"+spec.group: "+want))
	}
	if s := crd.Spec.Scope; s != apiextv1.NamespaceScoped && s != apiextv1.ClusterScoped {
		errs = append(errs, field.NotSupported(spec.Child("scope"), s, []string{"Namespaced", "Cluster"}))
	}
	storage, served := 0, 0
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storage++
		}
		if v.Served {
			served++
		}
	}
	if storage != 1 {
		errs = append(errs, field.Invalid(spec.Child("versions"), storage, "must have exactly one version marked as storage version"))
	}
	if served == 0 {
		errs = append(errs, field.Invalid(spec.Child("versions"), served, "must serve at least one version"))
	}
	if len(errs) > 0 {
		return req.invalid(crd.Name, errs...)
	}
	return nil
}

// crdOf returns the CRD an object of the request is, and the group-resource it
// defines; ok is false for any other object.
func crdOf(req *request, obj object) (crd *apiextv1.CustomResourceDefinition, gr schema.GroupResource, ok bool) {
	if req.rt.gr != crdGR {
		return nil, gr, false
	}
	crd, err := toCRD(obj)
	if err != nil {
		return nil, gr, false
	}
	return crd, schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}, true
}

// afterWrite reacts to a stored object. The caller holds s.mu.
func (s *Server) afterWrite(req *request, obj object) {
	s.bindVolumes(req.rt.gr, obj)
	crd, gr, ok := crdOf(req, obj)
	if !ok {
		return
	}
	if rt, served := s.types[gr]; served && rt.crd == crd.Name {
		s.serveCRD(crd) // already established: version changes apply at once
		return
	}
	if s.opts.EstablishDelay <= 0 {
		s.establish(crd.Name, crd.UID)
		return
	}
	s.tasks.Add(1)
	var t *time.Timer
	t = time.AfterFunc(s.opts.EstablishDelay, func() {
		defer s.tasks.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.timers, t)
		if !s.closed {
			s.establish(crd.Name, crd.UID)
		}
	})
	s.timers[t] = struct{}{}
}

// establish starts serving the CRD named name, if it is still the object with uid, and
// marks it Established. The caller holds s.mu.
func (s *Server) establish(name string, uid types.UID) {
	k := key{gr: crdGR, name: name}
	st, ok := s.objects.get(k)
	if !ok || st.uid() != uid {
		return
	}
	obj := st.object()
	crd, err := toCRD(obj)
	if err != nil {
		return
	}
	gr := schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}
	if rt, taken := s.types[gr]; taken && rt.crd != crd.Name {
		return // a built-in resource of that name: never served by a CRD
	}
	s.serveCRD(crd)
	updated, md := obj, meta(obj)
	md["resourceVersion"] = s.nextRV()
	var stored []any
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			stored = append(stored, v.Name)
		}
	}
	now := time.Now().UTC().Format(time.RFC3339)
	names, _ := json.Marshal(crd.Spec.Names)
	var accepted map[string]any
	json.Unmarshal(names, &accepted)
	updated["status"] = map[string]any{
		"conditions": []any{
			map[string]any{"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": now},
			map[string]any{"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": now},
		},
		"acceptedNames":  accepted,
		"storedVersions": stored,
	}
	s.record(watch.Modified, k, updated)
}

// serveCRD registers or updates the resource a CRD defines. The caller holds s.mu.
func (s *Server) serveCRD(crd *apiextv1.CustomResourceDefinition) {
	rt := &resourceType{
		gr:   schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural},
		kind: crd.Spec.Names.Kind, singular: crd.Spec.Names.Singular,
		namespaced: crd.Spec.Scope == apiextv1.NamespaceScoped, crd: crd.Name, generation: true,
		verbs: allVerbs, shortNames: crd.Spec.Names.ShortNames,
	}
	if rt.singular == "" {
		rt.singular = strings.ToLower(rt.kind)
	}
	for _, v := range crd.Spec.Versions {
		if v.Served {
			rt.versions = append(rt.versions, v.Name)
		}
		if v.Subresources != nil && v.Subresources.Status != nil {
			rt.status = true
		}
	}
	rt.versions = manifest.SortVersions(rt.versions)
	s.addType(rt)
}

// afterDelete reacts to a deleted object. The caller holds s.mu.
func (s *Server) afterDelete(req *request, obj object) {
	crd, gr, ok := crdOf(req, obj)
	if !ok {
		return
	}
	if rt, served := s.types[gr]; !served || rt.crd != crd.Name {
		return
	}
	delete(s.types, gr)
	var keys []key
	s.objects.inResource(gr, "", func(k key, _ *stored) { keys = append(keys, k) })
	for _, k := range keys {
		st, _ := s.objects.get(k)
		s.recordStored(watch.Deleted, k, st)
	}
}

// terminateNamespace deletes what namespace ns holds, then the namespace, as the
// namespace controller does. It runs after the request that deleted the namespace.
// The caller holds s.mu.
func (s *Server) terminateNamespace(ns string) {
	s.tasks.Add(1)
	go func() {
		defer s.tasks.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		var keys []key
		s.objects.inNamespace(ns, func(k key, _ *stored) { keys = append(keys, k) })
		slices.SortFunc(keys, func(a, b key) int { return strings.Compare(a.gr.String()+"/"+a.name, b.gr.String()+"/"+b.name) })
		for _, k := range keys {
			st, _ := s.objects.get(k)
			s.recordStored(watch.Deleted, k, st)
		}
		k := key{gr: schema.GroupResource{Resource: "namespaces"}, name: ns}
		if st, ok := s.objects.get(k); ok {
			s.recordStored(watch.Deleted, k, st)
		}
	}()
}
