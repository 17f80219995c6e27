package manifest

import (
	"hash/fnv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// An identity's hash is FNV-1a over its parts, each followed by a zero byte: what a
// process stores of a set (admission.Cluster does) means the same to every other. The
// set holds its identities in that hash's order.
func TestHashIsStableFNV(t *testing.T) {
	ids := []ID{
		{Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web"},
		{Resource: "namespaces", Name: "shop"},
		{Group: "a", Resource: "b", Namespace: "c", Name: "é\x00"},
		{},
	}
	for _, id := range ids {
		h := fnv.New64a()
		for _, s := range []string{id.Group, id.Resource, id.Namespace, id.Name} {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
		assert.Equal(t, h.Sum64(), id.Hash(), "%v", id)
	}
	assert.Equal(t, uint64(0xe4e5a4e31b4cfd73), ids[0].Hash(), "the value stored by releases before")
	set := NewSet(ids...)
	for _, id := range ids {
		got, ok := set.ByHash(id.Hash())
		assert.True(t, ok)
		assert.Equal(t, id, got)
	}
	_, ok := set.ByHash(ids[0].Hash() + 1)
	assert.False(t, ok)
	var prev uint64
	for h, id := range set.Hashed() {
		assert.Equal(t, id.Hash(), h)
		assert.GreaterOrEqual(t, h, prev)
		prev = h
	}
}
