// Package filter selects what a restore restores or a backup backs up, as Velero's
// options do: namespaces in or out, resources in or out (named as kubectl names them:
// plural, singular, short name or kind, with or without the group), cluster-scoped
// resources in, out or decided automatically, and a label selector or several of which
// one must match.
//
// A Spec is what the user says; Resolve turns its resource names into group-resources
// through a Catalog of what the backup or the cluster holds, and refuses a name nothing
// answers to with an *UnknownResourceError.
package filter

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/restoregraph/restoregraph/manifest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Spec is a selection as the user gives it. The zero value selects everything but,
// as Velero decides by default, cluster-scoped resources when namespaces are limited.
type Spec struct {
	// IncludeNamespaces limits to these namespaces; empty or "*" is every namespace.
	IncludeNamespaces []string
	ExcludeNamespaces []string
	// IncludeResources limits to these resources; empty or "*" is every resource.
	IncludeResources []string
	ExcludeResources []string
	// IncludeClusterResources: true includes cluster-scoped resources, false excludes
	// them, nil decides: included when every namespace is, else only those the caller
	// says are needed (a restore's CRDs of included custom resources).
	IncludeClusterResources *bool
	// Selector limits to objects whose labels match; nil is everything.
	Selector labels.Selector
	// OrSelectors limits to objects whose labels match at least one of them, as Velero's
	// orLabelSelectors; empty is everything. Velero takes one of Selector and OrSelectors,
	// and so does Resolve.
	OrSelectors []labels.Selector
}

// ErrBothSelectors is returned by Resolve for a spec with both a Selector and OrSelectors.
var ErrBothSelectors = errors.New("filter: a label selector and or-selectors each select by labels: give one")

// Empty reports whether the spec selects everything, so that nothing needs resolving.
func (s Spec) Empty() bool {
	return len(s.IncludeNamespaces)+len(s.ExcludeNamespaces)+len(s.IncludeResources)+len(s.ExcludeResources) == 0 &&
		s.IncludeClusterResources == nil && (s.Selector == nil || s.Selector.Empty()) && len(s.OrSelectors) == 0
}

// UnknownResourceError names a resource that neither the backup nor the cluster knows.
type UnknownResourceError struct {
	Name string
}

func (e *UnknownResourceError) Error() string {
	return fmt.Sprintf("filter: no resource is named %q (neither in the backup nor served by the cluster)", e.Name)
}

// Names is what a Catalog knows of one resource.
type Names struct {
	schema.GroupResource
	Kind       string
	Singular   string
	ShortNames []string
}

// Catalog resolves resource names, as kubectl does: "deployments", "deployment",
// "deploy", "Deployment", each optionally followed by ".<group>" ("deployments.apps").
type Catalog []Names

// Resolve returns every group-resource name answers to, or an *UnknownResourceError.
func (c Catalog) Resolve(name string) ([]schema.GroupResource, error) {
	lower := strings.ToLower(strings.TrimSpace(name))
	var out []schema.GroupResource
	for _, n := range c {
		if n.answersTo(lower) && !slices.Contains(out, n.GroupResource) {
			out = append(out, n.GroupResource)
		}
	}
	if len(out) == 0 {
		return nil, &UnknownResourceError{Name: name}
	}
	slices.SortFunc(out, manifest.CompareGroupResources)
	return out, nil
}

func (n Names) answersTo(name string) bool {
	for _, base := range n.names() {
		if name == base || (n.Group != "" && name == base+"."+n.Group) {
			return true
		}
	}
	return false
}

func (n Names) names() []string {
	out := []string{n.Resource, strings.ToLower(n.Kind), n.Singular}
	for _, s := range n.ShortNames {
		out = append(out, strings.ToLower(s))
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

// FromDiscovery returns the names a cluster's discovery documents give its resources.
func FromDiscovery(lists []*metav1.APIResourceList) Catalog {
	var c Catalog
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") { // subresources
				continue
			}
			c = append(c, Names{GroupResource: gv.WithResource(r.Name).GroupResource(), Kind: r.Kind,
				Singular: r.SingularName, ShortNames: r.ShortNames})
		}
	}
	return c
}

// Filter is a Spec with its resource names resolved.
type Filter struct {
	spec                       Spec
	includeRes, excludeRes     map[schema.GroupResource]bool
	allNamespaces, allResource bool
}

// Resolve resolves the spec's resource names through c.
func (s Spec) Resolve(c Catalog) (*Filter, error) {
	if s.Selector != nil && !s.Selector.Empty() && len(s.OrSelectors) > 0 {
		return nil, ErrBothSelectors
	}
	f := &Filter{spec: s, includeRes: map[schema.GroupResource]bool{}, excludeRes: map[schema.GroupResource]bool{},
		allNamespaces: all(s.IncludeNamespaces) && len(s.ExcludeNamespaces) == 0, allResource: all(s.IncludeResources)}
	for _, x := range []struct {
		names []string
		into  map[schema.GroupResource]bool
	}{{s.IncludeResources, f.includeRes}, {s.ExcludeResources, f.excludeRes}} {
		for _, name := range x.names {
			if name == "*" {
				continue
			}
			grs, err := c.Resolve(name)
			if err != nil {
				return nil, err
			}
			for _, gr := range grs {
				x.into[gr] = true
			}
		}
	}
	return f, nil
}

func all(names []string) bool { return len(names) == 0 || slices.Contains(names, "*") }

// AllNamespaces reports whether the filter takes every namespace.
func (f *Filter) AllNamespaces() bool { return f.allNamespaces }

// Namespace reports whether objects of namespace ns are selected by the namespace
// filters.
func (f *Filter) Namespace(ns string) bool {
	if slices.Contains(f.spec.ExcludeNamespaces, ns) {
		return false
	}
	return all(f.spec.IncludeNamespaces) || slices.Contains(f.spec.IncludeNamespaces, ns)
}

// ResourceExcluded reports whether gr is named among the excluded resources.
func (f *Filter) ResourceExcluded(gr schema.GroupResource) bool { return f.excludeRes[gr] }

// ClusterResources is the spec's IncludeClusterResources: nil when decided automatically.
func (f *Filter) ClusterResources() *bool { return f.spec.IncludeClusterResources }

// Resource reports whether gr is selected by the resource filters.
func (f *Filter) Resource(gr schema.GroupResource) bool {
	return !f.excludeRes[gr] && (f.allResource || f.includeRes[gr])
}

// Exclusion says why the filter leaves item out, "" when it takes it. needed says of a
// cluster-scoped item whether the selection needs it when cluster-scoped resources are
// decided automatically. A Namespace is judged as the namespace it is, not as a
// cluster-scoped object.
func (f *Filter) Exclusion(it *manifest.Item, needed func(*manifest.Item) bool) string {
	gr := it.GroupResource()
	isNamespace := gr == schema.GroupResource{Resource: "namespaces"}
	switch {
	case it.Namespace != "" && !f.Namespace(it.Namespace):
		return "namespace " + it.Namespace + " is not included"
	case isNamespace && !f.Namespace(it.Name):
		return "namespace " + it.Name + " is not included"
	case !isNamespace && !f.Resource(gr):
		return gr.String() + " is not included"
	case f.spec.Selector != nil && !f.spec.Selector.Matches(&it.Labels):
		return "its labels do not match " + f.spec.Selector.String()
	case len(f.spec.OrSelectors) > 0 && !slices.ContainsFunc(f.spec.OrSelectors, func(s labels.Selector) bool { return s.Matches(&it.Labels) }):
		return "its labels match none of " + OrString(f.spec.OrSelectors)
	case it.Namespace == "" && !isNamespace && !f.clusterScoped(it, needed):
		return "cluster-scoped resources are not included"
	}
	return ""
}

func (f *Filter) clusterScoped(it *manifest.Item, needed func(*manifest.Item) bool) bool {
	switch {
	case f.spec.IncludeClusterResources != nil:
		return *f.spec.IncludeClusterResources
	case f.allNamespaces:
		return true
	}
	return needed != nil && needed(it)
}

// OrString writes selectors as Velero's --or-selector takes them: "a=b or c=d".
func OrString(selectors []labels.Selector) string {
	out := make([]string, len(selectors))
	for i, s := range selectors {
		out[i] = s.String()
	}
	return strings.Join(out, " or ")
}

// ParseOr reads selectors written as Velero's --or-selector takes them, "a=b or c=d";
// the error names the selector that does not parse.
func ParseOr(s string) ([]labels.Selector, error) {
	var out []labels.Selector
	for part := range strings.SplitSeq(s, " or ") {
		sel, err := labels.Parse(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("or-selector %q: %w", part, err)
		}
		out = append(out, sel)
	}
	return out, nil
}
