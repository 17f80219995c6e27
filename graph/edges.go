package graph

import (
	"strings"
)

// EdgeKind says why an edge exists. Kinds combine: an edge that exists for two reasons
// carries both bits.
type EdgeKind uint8

const (
	// EdgeOwner: the target's ownerReferences name the source.
	EdgeOwner EdgeKind = 1 << iota
	// EdgeCRD: the source is the CustomResourceDefinition of the target.
	EdgeCRD
	// EdgeNamespace: the source is the Namespace the target lives in.
	EdgeNamespace
	// EdgeDependsOn: the target's config.kubernetes.io/depends-on annotation names the source.
	EdgeDependsOn
	// EdgeClusterAPI: a Cluster API rule (the target belongs to the source Cluster).
	EdgeClusterAPI
	// EdgeVeleroOrder: Velero's resource type order, through barrier nodes.
	EdgeVeleroOrder
	// EdgeAdditionalItem: a plugin asked, at run time, for the source before the target.
	EdgeAdditionalItem
)

// hard edges are facts about the objects; a cycle made of them is an error. Rule edges
// are preferences, left out where they would close a cycle.
const hardEdges = EdgeOwner | EdgeCRD | EdgeNamespace | EdgeDependsOn

var kindNames = []struct {
	k    EdgeKind
	name string
}{
	{EdgeOwner, "owner"}, {EdgeCRD, "crd"}, {EdgeNamespace, "namespace"}, {EdgeDependsOn, "depends-on"},
	{EdgeClusterAPI, "cluster-api"}, {EdgeVeleroOrder, "velero-order"}, {EdgeAdditionalItem, "additional-item"},
}

// String lists the kinds, joined by "+": "owner+namespace".
func (k EdgeKind) String() string {
	var parts []string
	for _, kn := range kindNames {
		if k&kn.k != 0 {
			parts = append(parts, kn.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// Names returns the kinds' names, one per set bit.
func (k EdgeKind) Names() []string {
	var out []string
	for _, kn := range kindNames {
		if k&kn.k != 0 {
			out = append(out, kn.name)
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
