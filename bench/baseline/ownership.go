package baseline

import (
	"context"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/restore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Ownership counts the backup's ownership links, owner and dependent both in the backup,
// and how many of them the target holds: the dependent, found by namespace and name,
// names the UID its owner has in the target. Objects the backup holds under two groups
// count once, at the group-resource the manifest lists them under first.
func Ownership(ctx context.Context, tgt restore.Target, b *archive.Backup) (kept, links int, err error) {
	m := b.Manifest()
	uidNow := map[types.UID]types.UID{} // backup UID → UID in the target; "" when not there
	get := func(uid types.UID) (map[types.UID]bool, bool, error) {
		it, ok := m.ByUID(uid)
		if !ok {
			return nil, false, nil
		}
		r, _ := b.Resource(it.GroupResource())
		gvr := schema.GroupVersionResource{Group: it.Group, Version: r.Preferred, Resource: it.Resource}
		o, err := tgt.Dynamic.Resource(gvr).Namespace(it.Namespace).Get(ctx, it.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			uidNow[uid] = ""
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		uidNow[uid] = o.GetUID()
		refs := map[types.UID]bool{}
		for _, ref := range o.GetOwnerReferences() {
			refs[ref.UID] = true
		}
		return refs, true, nil
	}
	for _, it := range m.Items() {
		if len(it.OwnerUIDs) == 0 {
			continue
		}
		refs, ok, err := get(it.UID)
		if err != nil {
			return 0, 0, err
		}
		for _, owner := range it.OwnerUIDs {
			if _, inBackup := m.ByUID(owner); !inBackup {
				continue
			}
			links++
			if !ok {
				continue
			}
			now, seen := uidNow[owner]
			if !seen {
				if _, _, err := get(owner); err != nil {
					return 0, 0, err
				}
				now = uidNow[owner]
			}
			if now != "" && refs[now] {
				kept++
			}
		}
	}
	return kept, links, nil
}
