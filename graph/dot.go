package graph

import (
	"fmt"

	gonum "gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/encoding"
	"gonum.org/v1/gonum/graph/encoding/dot"
)

// DOT renders the graph in Graphviz's language: nodes labelled with kind,
// namespace/name and version, edges coloured and styled by their kind.
func (g *Graph) DOT(name string) ([]byte, error) {
	return dot.Marshal(dotGraph{g}, name, "", "  ")
}

type dotGraph struct{ *Graph }

func (d dotGraph) DOTAttributers() (graph, node, edge encoding.Attributer) {
	return attrs{{Key: "rankdir", Value: "LR"}}, attrs{{Key: "shape", Value: "box"}, {Key: "fontname", Value: "Helvetica"}}, attrs{}
}

// Edge returns a dotEdge so that dot.Marshal sees the edge's attributes.
func (d dotGraph) Edge(uid, vid int64) gonum.Edge {
	if e := d.EdgeFromTo(uid, vid); e != nil {
		return dotEdge{e, d.Graph}
	}
	return nil
}

type attrs []encoding.Attribute

func (a attrs) Attributes() []encoding.Attribute { return a }

// Attributes implements encoding.Attributer for DOT output.
func (n *Node) Attributes() []encoding.Attribute {
	if n.Item == nil {
		return []encoding.Attribute{{Key: "label", Value: fmt.Sprintf("%q", n.Barrier())}, {Key: "shape", Value: "diamond"}}
	}
	it := n.Item
	where := it.Name
	if it.Namespace != "" {
		where = it.Namespace + "/" + it.Name
	}
	gv := it.Version
	if it.Group != "" {
		gv = it.Group + "/" + it.Version
	}
	return []encoding.Attribute{{Key: "label", Value: fmt.Sprintf("%q", it.Kind+"\n"+where+"\n"+gv)}}
}

type dotEdge struct {
	*Edge
	g *Graph
}

var edgeStyles = map[EdgeKind][]encoding.Attribute{
	EdgeOwner:          {{Key: "color", Value: "black"}},
	EdgeCRD:            {{Key: "color", Value: "blue"}, {Key: "penwidth", Value: "2"}},
	EdgeNamespace:      {{Key: "color", Value: "gray"}, {Key: "style", Value: "dashed"}},
	EdgeDependsOn:      {{Key: "color", Value: "purple"}},
	EdgeAdditionalItem: {{Key: "color", Value: "red"}, {Key: "style", Value: "dashed"}},
}

// ruleColors colour rule edges, which are all dotted: rule i takes colour i.
var ruleColors = []string{"darkgreen", "orange", "brown", "teal", "magenta", "olive"}

// Attributes styles the edge by its strongest kind and labels it with all of them.
func (e dotEdge) Attributes() []encoding.Attribute {
	var out []encoding.Attribute
	for _, kn := range builtinKinds {
		if e.Kinds&kn.k != 0 {
			out = append(out, edgeStyles[kn.k]...)
			break
		}
	}
	if out == nil {
		for i := range maxRules {
			if e.Kinds&(RuleKind<<i) != 0 {
				out = []encoding.Attribute{{Key: "color", Value: ruleColors[i%len(ruleColors)]}, {Key: "style", Value: "dotted"}}
				break
			}
		}
	}
	return append(out, encoding.Attribute{Key: "tooltip", Value: fmt.Sprintf("%q", e.g.KindString(e.Kinds))})
}
