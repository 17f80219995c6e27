package memcluster

import "k8s.io/apimachinery/pkg/runtime/schema"

// objectIndex holds the store's objects by group-resource, namespace ("" for
// cluster-scoped objects) and name. A list of one resource, or of one namespace, reads
// only its own objects; and each of a million objects is a name in a map of names, whose
// string the object holds, not a key of a group-resource, a namespace and a name.
type objectIndex map[schema.GroupResource]map[string]map[string]*stored

func (x objectIndex) get(k key) (*stored, bool) {
	st, ok := x[k.gr][k.namespace][k.name]
	return st, ok
}

func (x objectIndex) set(k key, st *stored) {
	byNS := x[k.gr]
	if byNS == nil {
		byNS = map[string]map[string]*stored{}
		x[k.gr] = byNS
	}
	names := byNS[k.namespace]
	if names == nil {
		names = map[string]*stored{}
		byNS[k.namespace] = names
	}
	names[k.name] = st
}

// replace sets k, which x holds, to st, keyed by k's strings: a Go map given a new
// value keeps the key it had.
func (x objectIndex) replace(k key, st *stored) {
	names := x[k.gr][k.namespace]
	delete(names, k.name)
	names[k.name] = st
}

func (x objectIndex) delete(k key) {
	byNS := x[k.gr]
	names := byNS[k.namespace]
	delete(names, k.name)
	if len(names) == 0 {
		delete(byNS, k.namespace)
		if len(byNS) == 0 {
			delete(x, k.gr)
		}
	}
}

// inResource calls f for each object of gr in namespace ns, or in every namespace when
// ns is "" (which is also where cluster-scoped objects are). f may not change x.
func (x objectIndex) inResource(gr schema.GroupResource, ns string, f func(key, *stored)) {
	each := func(ns string, names map[string]*stored) {
		for name, st := range names {
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
		for name, st := range byNS[ns] {
			f(key{gr: gr, namespace: ns, name: name}, st)
		}
	}
}

// key is st's key. st is stored.
func (st *stored) key() key {
	return key{gr: st.rt.gr, namespace: st.namespace, name: st.name()}
}
