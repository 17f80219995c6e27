package graph

import (
	"testing"

	"github.com/restoregraph/restoregraph/manifest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

func TestStatefulSetClaimsComeFirst(t *testing.T) {
	m := manifest.New(8)
	add := func(group, resource, ns, name string) {
		_, err := m.Add(&manifest.Item{Type: &manifest.Type{Group: group, Version: "v1", Resource: resource, Kind: resource}, Namespace: ns, Name: name, UID: types.UID(ns + "/" + resource + "/" + name)})
		require.NoError(t, err)
	}
	add("apps", "statefulsets", "shop", "db")
	add("apps", "statefulsets", "shop", "cache-db")
	add("", "persistentvolumeclaims", "shop", "data-db-0")
	add("", "persistentvolumeclaims", "shop", "data-db-1")
	add("", "persistentvolumeclaims", "shop", "wal-data-cache-db-0") // template wal-data of cache-db
	add("", "persistentvolumeclaims", "shop", "data-db")             // no ordinal
	add("", "persistentvolumeclaims", "other", "data-db-0")          // another namespace
	add("", "persistentvolumeclaims", "shop", "db-0")                // no template
	g, err := New(m, Options{Rules: []Rule{StatefulSetClaims}})
	require.NoError(t, err)
	preds := func(ns, name string) []string {
		var out []string
		for _, n := range g.Order() {
			if n.Item != nil && n.Item.Resource == "statefulsets" && n.Item.Namespace == ns && n.Item.Name == name {
				for _, p := range g.Predecessors(n.ID()) {
					out = append(out, g.NodeAt(int64(p)).Item.Name)
				}
			}
		}
		return out
	}
	assert.ElementsMatch(t, []string{"data-db-0", "data-db-1"}, preds("shop", "db"))
	assert.ElementsMatch(t, []string{"wal-data-cache-db-0"}, preds("shop", "cache-db"))
}
