package graph

import (
	"strconv"
	"strings"
)

// EdgeKind says why an edge exists. Kinds combine: an edge that exists for two reasons
// carries both bits. The low bits are the kinds every graph has; each Rule of a graph
// gets a bit of its own from RuleKind up, named by the graph (Graph.KindString).
type EdgeKind uint32

const (
	// EdgeOwner: the target's ownerReferences name the source.
	EdgeOwner EdgeKind = 1 << iota
	// EdgeCRD: the source is the CustomResourceDefinition of the target.
	EdgeCRD
	// EdgeNamespace: the source is the Namespace the target lives in.
	EdgeNamespace
	// EdgeDependsOn: the target's config.kubernetes.io/depends-on annotation names the source.
	EdgeDependsOn
	// EdgeAdditionalItem: a plugin asked, at run time, for the source before the target.
	EdgeAdditionalItem
)

// RuleKind is the kind of the first Rule's edges; rule i's is RuleKind << i.
const (
	RuleKind EdgeKind = 1 << 8
	maxRules          = 24
)

// hard edges are facts about the objects; a cycle made of them is an error. Rule edges
// are preferences, left out where they would close a cycle.
const hardEdges = EdgeOwner | EdgeCRD | EdgeNamespace | EdgeDependsOn

var builtinKinds = []struct {
	k    EdgeKind
	name string
}{
	{EdgeOwner, "owner"}, {EdgeCRD, "crd"}, {EdgeNamespace, "namespace"}, {EdgeDependsOn, "depends-on"},
	{EdgeAdditionalItem, "additional-item"},
}

// String lists the kinds, joined by "+": "owner+namespace". Rule kinds, which only
// their graph can name, read "rule0", "rule1", ...; Graph.KindString names them.
func (k EdgeKind) String() string { return kindString(k, nil) }

// Names returns the kinds' names, one per set bit, rule kinds as String names them.
func (k EdgeKind) Names() []string { return kindNames(k, nil) }

// KindString is EdgeKind.String with the graph's rules named: "owner+cluster-api".
func (g *Graph) KindString(k EdgeKind) string { return kindString(k, g.ruleNames) }

// KindNames is EdgeKind.Names with the graph's rules named.
func (g *Graph) KindNames(k EdgeKind) []string { return kindNames(k, g.ruleNames) }

func kindString(k EdgeKind, rules []string) string {
	parts := kindNames(k, rules)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

func kindNames(k EdgeKind, rules []string) []string {
	var out []string
	for _, kn := range builtinKinds {
		if k&kn.k != 0 {
			out = append(out, kn.name)
		}
	}
	for i := range maxRules {
		if k&(RuleKind<<i) == 0 {
			continue
		}
		if i < len(rules) {
			out = append(out, rules[i])
		} else {
			out = append(out, "rule"+strconv.Itoa(i))
		}
	}
	return out
}

// Warning is something the graph noticed and worked around.
type Warning struct {
	Node    *Node // the object concerned, or nil
	Message string
}

func (w Warning) String() string {
	if w.Node == nil {
		return w.Message
	}
	return w.Node.String() + ": " + w.Message
}
