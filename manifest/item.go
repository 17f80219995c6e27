package manifest

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Item is what a manifest records of one backed-up object.
type Item struct {
	// Type is the object's group, version, kind and resource, which its fields
	// (it.Group, it.Kind) read as the item's own. Items of one type share one Type
	// (Types): it is never changed, and an item of another type is given another.
	*Type
	Namespace string    `json:"namespace,omitempty"` // "" for cluster-scoped objects
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`

	Labels      Pairs       `json:"labels,omitempty"`
	Annotations Pairs       `json:"annotations,omitempty"`
	OwnerUIDs   []types.UID `json:"ownerUIDs,omitempty"`
}

// Type is what the items of one kind at one version share: a million items hold a
// pointer each, 8 bytes where four strings took 64.
type Type struct {
	Group    string `json:"group"`
	Version  string `json:"version"`
	Kind     string `json:"kind"`
	Resource string `json:"resource"`
}

// Types gives each distinct Type once, for items to share. A decoder keeps one; the
// zero value is ready to use.
type Types struct {
	m    map[Type]*Type
	last *Type // items come in runs of one type
}

// Of returns the Type equal to t, the same one each time.
func (ts *Types) Of(t Type) *Type {
	if ts.last != nil && *ts.last == t {
		return ts.last
	}
	p, ok := ts.m[t]
	if !ok {
		if ts.m == nil {
			ts.m = map[Type]*Type{}
		}
		p = &t
		ts.m[t] = p
	}
	ts.last = p
	return p
}

// ID returns the item's version-independent identity.
func (it *Item) ID() ID {
	return ID{Group: it.Group, Resource: it.Resource, Namespace: it.Namespace, Name: it.Name}
}

// GroupResource returns the item's group and resource.
func (it *Item) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: it.Group, Resource: it.Resource}
}

// GroupVersionKind returns the item's group, version and kind.
func (it *Item) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: it.Group, Version: it.Version, Kind: it.Kind}
}

// String names the item the way kubectl users read it: kind.group, namespace/name.
func (it *Item) String() string {
	if it.Type == nil {
		return "(an item with no type) " + it.Namespace + "/" + it.Name
	}
	kind := it.Kind
	if it.Group != "" {
		kind += "." + it.Group
	}
	if it.Namespace == "" {
		return kind + " " + it.Name
	}
	return kind + " " + it.Namespace + "/" + it.Name
}

// validate reports the first required field that is empty.
func (it *Item) validate() error {
	if it.Type == nil {
		return &InvalidItemError{Item: it.String(), Field: "type", Reason: "must not be nil"}
	}
	for _, f := range [...]struct{ name, value string }{
		{"version", it.Version}, {"kind", it.Kind}, {"resource", it.Resource},
		{"name", it.Name}, {"uid", string(it.UID)},
	} {
		if f.value == "" {
			return &InvalidItemError{Item: it.String(), Field: f.name, Reason: "must not be empty"}
		}
	}
	return nil
}

// ID is an object's identity across API versions: group, resource, namespace and name.
type ID struct {
	Group     string `json:"group"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// Hash hashes the identity with FNV-1a, each part (group, resource, namespace, name)
// followed by a zero byte: the same in every process and every release, so that hashes
// one process stores (admission.Cluster's) mean the same to another.
func (id ID) Hash() uint64 {
	// Written out rather than through hash/fnv, which allocates: it runs for every
	// object of every operation.
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, s := range [...]string{id.Group, id.Resource, id.Namespace, id.Name} {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * prime
		}
		h *= prime // ^ 0
	}
	return h
}

// GroupResource returns the identity's group and resource.
func (id ID) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: id.Group, Resource: id.Resource}
}

// String renders the identity as resource.group/namespace/name (cluster-scoped: no namespace).
func (id ID) String() string {
	gr := id.GroupResource().String()
	if id.Namespace == "" {
		return gr + "/" + id.Name
	}
	return gr + "/" + id.Namespace + "/" + id.Name
}

// Compare orders identities by group, resource, namespace, then name.
func (id ID) Compare(o ID) int {
	if c := strings.Compare(id.Group, o.Group); c != 0 {
		return c
	}
	if c := strings.Compare(id.Resource, o.Resource); c != 0 {
		return c
	}
	if c := strings.Compare(id.Namespace, o.Namespace); c != 0 {
		return c
	}
	return strings.Compare(id.Name, o.Name)
}

// Pair is one key and value of a label or annotation.
type Pair struct{ Key, Value string }

// Pairs holds labels or annotations as a slice sorted by key: a fraction of the memory
// of a map, which matters at a million items. Pairs implements the
// k8s.io/apimachinery/pkg/labels.Labels interface, so a labels.Selector matches it
// directly. It is encoded in JSON as an object.
type Pairs []Pair

// PairsFromMap returns the pairs of m sorted by key; nil for an empty map.
func PairsFromMap(m map[string]string) Pairs {
	if len(m) == 0 {
		return nil
	}
	p := make(Pairs, 0, len(m))
	for k, v := range m {
		p = append(p, Pair{k, v})
	}
	slices.SortFunc(p, comparePairs)
	return p
}

// Has reports whether key is present.
func (p Pairs) Has(key string) bool {
	_, ok := p.find(key)
	return ok
}

// Get returns the value of key, or "" when absent.
func (p Pairs) Get(key string) string {
	if i, ok := p.find(key); ok {
		return p[i].Value
	}
	return ""
}

// Lookup returns the value of key and whether it is present.
func (p Pairs) Lookup(key string) (string, bool) {
	if i, ok := p.find(key); ok {
		return p[i].Value, true
	}
	return "", false
}

// Map returns the pairs as a new map.
func (p Pairs) Map() map[string]string {
	m := make(map[string]string, len(p))
	for _, kv := range p {
		m[kv.Key] = kv.Value
	}
	return m
}

func (p Pairs) find(key string) (int, bool) {
	return slices.BinarySearchFunc(p, key, func(kv Pair, k string) int { return strings.Compare(kv.Key, k) })
}

// String renders the pairs as k=v,k=v in key order.
func (p Pairs) String() string {
	var b strings.Builder
	for i, kv := range p {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%s", kv.Key, kv.Value)
	}
	return b.String()
}

func comparePairs(a, b Pair) int { return strings.Compare(a.Key, b.Key) }
