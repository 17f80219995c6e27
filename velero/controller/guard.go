package controller

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/restoregraph/restoregraph/modifier"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero"
)

// Guard is what the controller refuses of a Restore, beyond what Velero checks. The
// controller restores with rights of its own, cluster-wide as Velero's server: whoever
// may create a Restore would otherwise reach, through it, where their own rights do not
// let them. A Restore the guard refuses fails validation, the reason on it, before
// anything is read from its backup's location or written to the cluster.
type Guard struct {
	// ProtectedNamespaces are namespaces no Restore restores into, by a namespace
	// mapping or as its backup holds them; nil: DefaultProtectedNamespaces, empty: none.
	// Velero's own namespace, which holds its locations' credentials, is always
	// protected.
	ProtectedNamespaces []string
	// RBACModifiers lets resource modifiers change Roles, ClusterRoles and their
	// bindings, which would grant what the backup did not; refused by default.
	RBACModifiers bool
	// Locations, when not empty, are the backup storage locations whose backups may be
	// restored; a Restore of a backup in another is refused.
	Locations []string
}

// DefaultProtectedNamespaces are the namespaces of the cluster's own components.
var DefaultProtectedNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// rbacResources are the resources whose objects grant rights.
var rbacResources = []schema.GroupResource{
	{Group: "rbac.authorization.k8s.io", Resource: "roles"}, {Group: "rbac.authorization.k8s.io", Resource: "rolebindings"},
	{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, {Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
}

// protected returns the namespaces g protects in the cluster whose Velero namespace is
// veleroNamespace.
func (g Guard) protected(veleroNamespace string) []string {
	ns := g.ProtectedNamespaces
	if ns == nil {
		ns = DefaultProtectedNamespaces
	}
	return append(slices.Clone(ns), veleroNamespace)
}

// checkMappings refuses a namespace mapping onto a protected namespace.
func (g Guard) checkMappings(sel restore.Selection, veleroNamespace string) error {
	protected := g.protected(veleroNamespace)
	for _, src := range sortedKeys(sel.NamespaceMappings) {
		if dst := sel.NamespaceMappings[src]; slices.Contains(protected, dst) {
			return fmt.Errorf("spec.namespaceMapping: %s maps onto %s, a protected namespace the controller restores nothing into", src, dst)
		}
	}
	return nil
}

// checkModifiers refuses resource modifiers whose rules apply to RBAC's objects, unless
// g allows them. A rule that takes them in by a wildcard ("**", "*.rbac.authorization.k8s.io")
// is refused too: it would change them as well.
func (g Guard) checkModifiers(m *modifier.Modifiers) error {
	if g.RBACModifiers || m == nil {
		return nil
	}
	for _, gr := range rbacResources {
		if rules := m.RulesFor(gr); len(rules) > 0 {
			return fmt.Errorf("spec.resourceModifier: rule %d (groupResource %q) would change %s, which grant rights: "+
				"the controller does not let resource modifiers rewrite RBAC", rules[0], m.Spec().Rules[rules[0]].Conditions.GroupResource, gr)
		}
	}
	return nil
}

// checkLocation refuses a backup in a location g does not list.
func (g Guard) checkLocation(b *velero.Backup) error {
	if len(g.Locations) == 0 || slices.Contains(g.Locations, b.Location.Name) {
		return nil
	}
	return fmt.Errorf("spec.backupName: backup %s is in storage location %s, which the controller does not restore from (it restores from %s)",
		b.Name, b.Location.Name, strings.Join(g.Locations, ", "))
}

// checkPlan refuses a plan that restores an object into a protected namespace, or a
// protected Namespace itself.
func (g Guard) checkPlan(p *restore.Plan, veleroNamespace string) error {
	protected := g.protected(veleroNamespace)
	for po := range p.Objects() {
		if po.Excluded != "" {
			continue
		}
		ns := po.Namespace
		if po.TargetNamespace != "" {
			ns = po.TargetNamespace
		}
		if po.Group == "" && po.Resource == "namespaces" {
			ns = po.Name
			if po.TargetName != "" {
				ns = po.TargetName
			}
		}
		if ns != "" && slices.Contains(protected, ns) {
			name := po.Name
			if po.Namespace != "" {
				name = po.Namespace + "/" + po.Name
			}
			return fmt.Errorf("%s %s would be restored into %s, a protected namespace the controller restores nothing into "+
				"(leave it out with spec.excludedNamespaces, or map it elsewhere)", po.Kind, name, ns)
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
