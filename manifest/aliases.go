package manifest

import (
	"fmt"
	"iter"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// supersededBy names, for a group-resource under which the API server also serves the
// objects of another, that other one: the newer, non-deprecated group. The object is
// one, served twice, and a backup that lists every served resource holds it twice with
// one UID.
var supersededBy = map[schema.GroupResource]schema.GroupResource{
	{Resource: "events"}:                                   {Group: "events.k8s.io", Resource: "events"},
	{Group: "extensions", Resource: "deployments"}:         {Group: "apps", Resource: "deployments"},
	{Group: "extensions", Resource: "daemonsets"}:          {Group: "apps", Resource: "daemonsets"},
	{Group: "extensions", Resource: "replicasets"}:         {Group: "apps", Resource: "replicasets"},
	{Group: "extensions", Resource: "ingresses"}:           {Group: "networking.k8s.io", Resource: "ingresses"},
	{Group: "extensions", Resource: "networkpolicies"}:     {Group: "networking.k8s.io", Resource: "networkpolicies"},
	{Group: "extensions", Resource: "podsecuritypolicies"}: {Group: "policy", Resource: "podsecuritypolicies"},
}

// preferred reports whether the copy under a, rather than under b, is the one the
// manifest keeps as the object: the superseding group, else the first in group-resource
// order, so that the choice never depends on the order items were added in.
func preferred(a, b schema.GroupResource) bool {
	switch {
	case supersededBy[b] == a:
		return true
	case supersededBy[a] == b:
		return false
	}
	return CompareGroupResources(a, b) < 0
}

// fold records item, whose UID prev already has, as a second copy of one object when it
// is one: the same kind, namespace and name under another group-resource. Anything else
// claiming a taken UID is a second object, and an error.
func (m *Manifest) fold(prev, item *Item) error {
	if prev.Kind != item.Kind || prev.Namespace != item.Namespace || prev.Name != item.Name || prev.GroupResource() == item.GroupResource() {
		return fmt.Errorf("%w: uid %s of %s is taken by %s", ErrItemAlreadyExists, item.UID, item, prev)
	}
	for _, a := range m.aliases[item.UID] {
		if a.GroupResource() == item.GroupResource() {
			return fmt.Errorf("%w: uid %s of %s is taken by %s", ErrItemAlreadyExists, item.UID, item, a)
		}
	}
	if id := item.ID(); m.get(id) != nil {
		return fmt.Errorf("%w: %s (uid %s) is already recorded with uid %s", ErrItemAlreadyExists, id, item.UID, m.get(id).UID)
	}
	if m.aliases == nil {
		m.aliases = map[types.UID][]*Item{}
	}
	primary, alias := prev, item
	if preferred(item.GroupResource(), prev.GroupResource()) {
		primary, alias = item, prev
		if m.replaced == nil {
			m.replaced = map[*Item]*Item{}
		}
		for was, now := range m.replaced { // a third copy replaces a replacement
			if now == prev {
				m.replaced[was] = item
			}
		}
		m.replaced[prev] = item // applied to the items slice on its next read
		m.byUID.Set(item.UID, item)
		for _, a := range m.aliases[item.UID] {
			m.setID(a.ID(), item)
		}
		m.sorted = false
	}
	m.aliases[item.UID] = append(m.aliases[item.UID], alias)
	m.setID(primary.ID(), primary)
	m.setID(alias.ID(), primary)
	m.children, m.set = nil, nil
	return nil
}

// Aliases returns the other group-resources under which the object of uid was recorded
// (events both in the core group and in events.k8s.io): the same object, kept once.
func (m *Manifest) Aliases(uid types.UID) []*Item { return m.aliases[uid] }

// Folded iterates every object recorded under more than one group-resource, with the
// copies folded into it.
func (m *Manifest) Folded() iter.Seq2[*Item, []*Item] {
	return func(yield func(*Item, []*Item) bool) {
		for uid, aliases := range m.aliases {
			if it, _ := m.byUID.Get(uid); !yield(it, aliases) {
				return
			}
		}
	}
}

// applyReplaced puts the preferred copies in the items slice. Callers hold m.mu.
func (m *Manifest) applyReplaced() {
	if len(m.replaced) == 0 {
		return
	}
	for i, it := range m.items {
		if r, ok := m.replaced[it]; ok {
			m.items[i] = r
		}
	}
	m.replaced = nil
}
