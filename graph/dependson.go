package graph

import (
	"fmt"
	"slices"
	"strings"
)

// DependsOnAnnotation declares an object's dependencies, in the format kpt and
// sigs.k8s.io/cli-utils use: a comma-separated list of object references,
// <group>/namespaces/<namespace>/<kind>/<name> for namespaced objects and
// <group>/<kind>/<name> for cluster-scoped ones; the core group is empty
// (/namespaces/default/ConfigMap/settings).
const DependsOnAnnotation = "config.kubernetes.io/depends-on"

// ObjectRef is one reference of a depends-on annotation.
type ObjectRef struct {
	Group, Kind, Namespace, Name string
}

func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Group + "/" + r.Kind + "/" + r.Name
	}
	return r.Group + "/namespaces/" + r.Namespace + "/" + r.Kind + "/" + r.Name
}

// DependsOnError names an object whose depends-on annotation is malformed.
type DependsOnError struct {
	Object string // as Item.String renders it
	Value  string
	Reason string
}

func (e *DependsOnError) Error() string {
	return fmt.Sprintf("%s: annotation %s=%q: %s", e.Object, DependsOnAnnotation, e.Value, e.Reason)
}

// ParseDependsOn parses a depends-on annotation value. The error, when not nil, is a
// reason to be wrapped in a *DependsOnError by the caller that knows the object.
func ParseDependsOn(value string) ([]ObjectRef, error) {
	var refs []ObjectRef
	for i, raw := range strings.Split(value, ",") {
		s := strings.TrimSpace(raw)
		if s == "" {
			return nil, fmt.Errorf("reference %d is empty", i+1)
		}
		parts := strings.Split(s, "/")
		var r ObjectRef
		switch {
		case len(parts) == 3:
			r = ObjectRef{Group: parts[0], Kind: parts[1], Name: parts[2]}
		case len(parts) == 5 && parts[1] == "namespaces":
			r = ObjectRef{Group: parts[0], Namespace: parts[2], Kind: parts[3], Name: parts[4]}
			if r.Namespace == "" {
				return nil, fmt.Errorf("reference %q has an empty namespace", s)
			}
		default:
			return nil, fmt.Errorf("reference %q is neither <group>/<kind>/<name> nor <group>/namespaces/<namespace>/<kind>/<name>", s)
		}
		if r.Kind == "" || r.Name == "" {
			return nil, fmt.Errorf("reference %q has an empty kind or name", s)
		}
		refs = append(refs, r)
	}
	return refs, nil
}

func (b *builder) dependsOnEdges() {
	var index map[ObjectRef]int32 // built on first use: most backups have no annotations
	for _, i := range b.dependsOn {
		it := b.items[i]
		value, _ := it.Annotations.Lookup(DependsOnAnnotation)
		refs, err := ParseDependsOn(value)
		if err != nil {
			b.errs = append(b.errs, &DependsOnError{Object: it.String(), Value: value, Reason: err.Error()})
			continue
		}
		if index == nil {
			index = make(map[ObjectRef]int32, len(b.items))
			for j, o := range b.items {
				index[ObjectRef{o.Group, o.Kind, o.Namespace, o.Name}] = int32(j)
			}
		}
		// The edges go in by their sources' order: each then goes in after the one
		// before it in i's list of predecessors, moving at most the few the build put
		// there. In the annotation's order each would move every one after it, and an
		// annotation may name thousands.
		deps := make([]int32, 0, len(refs))
		for _, r := range refs {
			if dep, ok := index[r]; ok {
				deps = append(deps, dep)
			} else {
				b.g.warn(b.g.node(i), "depends-on names "+r.String()+", which is not in the backup")
			}
		}
		slices.Sort(deps)
		for _, dep := range deps {
			b.edge(dep, i, EdgeDependsOn)
		}
	}
}
