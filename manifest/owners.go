package manifest

import "k8s.io/apimachinery/pkg/types"

// Owners returns the items that own item and, separately, the owner UIDs that name no
// item in the manifest (dangling owners), both in the order of item.OwnerUIDs.
func (m *Manifest) Owners(item *Item) (owners []*Item, dangling []types.UID) {
	for _, uid := range item.OwnerUIDs {
		if o, ok := m.ByUID(uid); ok {
			owners = append(owners, o)
		} else {
			dangling = append(dangling, uid)
		}
	}
	return owners, dangling
}

// Children returns the items that name uid among their owners, in canonical order.
func (m *Manifest) Children(uid types.UID) []*Item {
	items := m.Items()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.children == nil {
		m.children = make(map[types.UID][]*Item)
		for _, it := range items {
			for _, o := range it.OwnerUIDs {
				m.children[o] = append(m.children[o], it)
			}
		}
	}
	return m.children[uid]
}

// DanglingOwner is an owner UID recorded on an item that names no item in the manifest:
// the owner was not backed up, or was excluded from it.
type DanglingOwner struct {
	Item     *Item
	OwnerUID types.UID
}

// Dangling returns every dangling owner reference, in canonical item order.
func (m *Manifest) Dangling() []DanglingOwner {
	var out []DanglingOwner
	for _, it := range m.Items() {
		for _, uid := range it.OwnerUIDs {
			if _, ok := m.ByUID(uid); !ok {
				out = append(out, DanglingOwner{Item: it, OwnerUID: uid})
			}
		}
	}
	return out
}
