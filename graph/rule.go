package graph

import (
	"fmt"

	"github.com/restoregraph/restoregraph/manifest"
)

// Rule adds ordering edges that are preferences rather than facts about the objects:
// "restore the Cluster before what belongs to it". A rule edge that would close a cycle,
// or that touches an object on a cycle, is left out with a warning; the hard edges
// (owners, CRDs, namespaces, depends-on) always win. A rule set lives in a file of its
// own (rule_clusterapi.go is the example); callers pass the rules they want in Options.
type Rule interface {
	// Name names the rule's edges in plans, reports and DOT: "cluster-api".
	Name() string
	// AddEdges adds the rule's edges through b.
	AddEdges(b *RuleBuilder)
}

// RuleBuilder is what a Rule adds its edges through.
type RuleBuilder struct {
	g     *Graph
	items []*manifest.Item
	kind  EdgeKind
}

// Items returns the manifest's items: item i is node i. The slice is shared.
func (b *RuleBuilder) Items() []*manifest.Item { return b.items }

// Edge asks for node to to start after node from (item or barrier indexes).
func (b *RuleBuilder) Edge(from, to int) {
	g := b.g
	f, t := int32(from), int32(to)
	if f == t || g.pos[f] < 0 || g.pos[t] < 0 {
		return
	}
	if err := g.AddEdge(int64(f), int64(t), b.kind); err != nil {
		g.warn(g.node(t), fmt.Sprintf("%s rule edge from %s left out: it would close a cycle", g.KindString(b.kind), g.node(f)))
	}
}

// Barrier adds a node that restores nothing, named name, and returns its index. Rules
// that order whole groups of objects go through barriers: n + m edges instead of n × m.
func (b *RuleBuilder) Barrier(name string) int { return int(b.g.addNode(name)) }

// applyRules runs each rule with its own edge kind.
func (g *Graph) applyRules(items []*manifest.Item, rules []Rule) error {
	if len(rules) > maxRules {
		return fmt.Errorf("graph: %d rules, at most %d", len(rules), maxRules)
	}
	for i, r := range rules {
		g.ruleNames = append(g.ruleNames, r.Name())
		r.AddEdges(&RuleBuilder{g: g, items: items, kind: RuleKind << i})
	}
	return nil
}
