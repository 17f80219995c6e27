// Package graph turns a backup's manifest into the DAG that decides restore order.
//
// An edge a → b means b may start only after a is restored and ready. Every edge
// records why it exists (EdgeKind, possibly several): an ownerReference (owner →
// dependent), a CRD and its custom resources, a Namespace and the objects in it, a
// config.kubernetes.io/depends-on annotation (the format kpt and cli-utils use), or a
// Rule passed in Options (ClusterAPI, or the caller's own: a Rule adds edges, and
// barrier nodes, through a RuleBuilder, and its edges carry a kind of their own named
// after it). Edges that plugins ask for at run time are the scheduler's; the graph
// offers the check it needs (WouldCycle, AddEdge).
//
// Guarantees:
//
//   - Bad shapes never panic. Dangling owners are reported and the item becomes a root;
//     self-references are reported and dropped; malformed depends-on annotations are
//     *DependsOnError values naming the object.
//   - Cycles made of ownerReferences, CRD, Namespace or depends-on edges are reported as
//     a *CycleError listing each cycle with its objects and edge kinds. The graph is
//     still returned: Order and the analyses cover every node that is neither on a cycle
//     nor behind one, and Blocked lists the rest.
//   - A rule edge that would close a cycle is left out, with a warning.
//   - Determinism: node IDs follow the manifest's canonical order; Order is a
//     deterministic topological order.
//
// *Graph implements gonum's graph.Directed, so gonum's topo, path and traverse packages
// work on it directly. Nodes are identified by int64 IDs from 0 to Len()-1.
//
// A Graph is safe for concurrent reads; AddEdge must not run concurrently with anything.
package graph
