package graph_test

import (
	"fmt"

	"github.com/restoregraph/restoregraph/graph"
	"github.com/restoregraph/restoregraph/manifest"
	"k8s.io/apimachinery/pkg/types"
)

func Example() {
	m := manifest.New(0)
	m.Add(&manifest.Item{Type: &manifest.Type{Version: "v1", Kind: "Namespace", Resource: "namespaces"}, Name: "shop", UID: "ns"})
	m.Add(&manifest.Item{Type: &manifest.Type{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments"}, Namespace: "shop", Name: "web", UID: "dep"})
	m.Add(&manifest.Item{Type: &manifest.Type{Group: "apps", Version: "v1", Kind: "ReplicaSet", Resource: "replicasets"}, Namespace: "shop", Name: "web-5d8f", UID: "rs",
		OwnerUIDs: []types.UID{"dep"}})

	g, err := graph.New(m, graph.Options{})
	if err != nil {
		panic(err)
	}
	for _, n := range g.Order() {
		fmt.Print(n, " <-")
		for _, p := range g.Predecessors(n.ID()) {
			fmt.Print(" ", g.NodeAt(int64(p)), " (", g.EdgeFromTo(int64(p), n.ID()).Kinds, ")")
		}
		fmt.Println()
	}
	// Output:
	// Namespace shop <-
	// Deployment.apps shop/web <- Namespace shop (namespace)
	// ReplicaSet.apps shop/web-5d8f <- Namespace shop (namespace) Deployment.apps shop/web (owner)
}
