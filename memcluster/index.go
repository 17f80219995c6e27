package memcluster

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/restoregraph/restoregraph/internal/keyed"
)

// objectIndex holds the store's objects by group-resource, namespace ("" for
// cluster-scoped objects) and name. A list of one resource, or of one namespace, reads
// only its own objects; and each of a million objects is its own key in a table of
// names (keyed.Map: its name is cut from its record), not a key of a group-resource, a
// namespace and a name, nor a string the index keeps.
type objectIndex map[schema.GroupResource]map[string]*keyed.Map[string, *stored]

func storedName(st *stored) string { return st.name() }

func (x objectIndex) get(k key) (*stored, bool) {
	if names := x[k.gr][k.namespace]; names != nil {
		return names.Get(k.name)
	}
	return nil, false
}

func (x objectIndex) set(k key, st *stored) {
	byNS := x[k.gr]
	if byNS == nil {
		byNS = map[string]*keyed.Map[string, *stored]{}
		x[k.gr] = byNS
	}
	names := byNS[k.namespace]
	if names == nil {
		names = keyed.New(0, storedName)
		byNS[k.namespace] = names
	}
	names.Set(k.name, st)
}

func (x objectIndex) delete(k key) {
	byNS := x[k.gr]
	names := byNS[k.namespace]
	if names == nil {
		return
	}
	names.Delete(k.name)
	if names.Len() == 0 {
		delete(byNS, k.namespace)
		if len(byNS) == 0 {
			delete(x, k.gr)
		}
	}
}

// inResource calls f for each object of gr in namespace ns, or in every namespace when
// ns is "" (which is also where cluster-scoped objects are). f may not change x.
func (x objectIndex) inResource(gr schema.GroupResource, ns string, f func(key, *stored)) {
	each := func(ns string, names *keyed.Map[string, *stored]) {
		if names == nil {
			return
		}
		for name, st := range names.All() {
			f(key{gr: gr, namespace: ns, name: name}, st)
		}
	}
	if ns != "" {
		each(ns, x[gr][ns])
		return
	}
	for ns, names := range x[gr] {
		each(ns, names)
	}
}

// inNamespace calls f for each object in namespace ns, of every resource. f may not
// change x.
func (x objectIndex) inNamespace(ns string, f func(key, *stored)) {
	for gr, byNS := range x {
		if names := byNS[ns]; names != nil {
			for name, st := range names.All() {
				f(key{gr: gr, namespace: ns, name: name}, st)
			}
		}
	}
}

// key is st's key. st is stored.
func (st *stored) key() key {
	return key{gr: st.rt.gr, namespace: st.namespace(), name: st.name()}
}
