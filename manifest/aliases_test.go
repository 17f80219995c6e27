package manifest

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// event is one Event as a real API server lists it under both groups: one UID.
func event(group string) *Item {
	return &Item{Type: &Type{Group: group, Version: "v1", Kind: "Event", Resource: "events"}, Namespace: "shop",
		Name: "web.18ea58fdc27a7ba1", UID: "dac54b33-123b-4e2f-941d-cd0f237e7891"}
}

func TestOneObjectUnderTwoGroupsIsFolded(t *testing.T) {
	for _, order := range [][]string{{"", "events.k8s.io"}, {"events.k8s.io", ""}} {
		m := New(0)
		first, second := event(order[0]), event(order[1])
		added, err := m.Add(first)
		require.NoError(t, err)
		assert.True(t, added)
		added, err = m.Add(second)
		require.NoError(t, err, "the same object under another group is no duplicate")
		assert.False(t, added, "it is folded, not added")

		assert.Equal(t, 1, m.Len())
		it, _ := m.ByUID(first.UID)
		assert.Equal(t, "events.k8s.io", it.Group, "kept under the newer group, whatever the order: %v", order)
		assert.Equal(t, "events.k8s.io", m.Items()[0].Group)
		require.Len(t, m.Aliases(first.UID), 1)
		assert.Equal(t, "", m.Aliases(first.UID)[0].Group)
		core, ok := m.Get(event("").ID())
		assert.True(t, ok && core == it, "either name finds the object")
		assert.True(t, m.Set().Has(event("").ID()) && m.Set().Has(event("events.k8s.io").ID()), "the set holds both names")
		var grs []string
		for _, r := range m.Resources() {
			grs = append(grs, r.GroupResource.String())
		}
		assert.Equal(t, []string{"events", "events.events.k8s.io"}, grs)

		var buf bytes.Buffer
		require.NoError(t, Encode(&buf, m))
		again, err := Decode(&buf)
		require.NoError(t, err)
		assert.Equal(t, 1, again.Len())
		assert.Equal(t, m.Aliases(first.UID), again.Aliases(first.UID), "the folded copy survives the file")
	}
}

func TestExtensionsFoldsIntoApps(t *testing.T) {
	m := New(0)
	ext := &Item{Type: &Type{Group: "extensions", Version: "v1beta1", Kind: "Deployment", Resource: "deployments"}, Namespace: "shop", Name: "web", UID: "d1"}
	apps := &Item{Type: &Type{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments"}, Namespace: "shop", Name: "web", UID: "d1"}
	_, err := m.Add(ext)
	require.NoError(t, err)
	_, err = m.Add(apps)
	require.NoError(t, err)
	it, _ := m.ByUID("d1")
	assert.Equal(t, "apps", it.Group)
	assert.Equal(t, []*Item{apps}, m.Items())
}

func TestTwoObjectsClaimingOneUIDAreRefused(t *testing.T) {
	m := New(0)
	_, err := m.Add(event(""))
	require.NoError(t, err)
	other := event("events.k8s.io")
	other.Name = "another"
	_, err = m.Add(other)
	assert.ErrorIs(t, err, ErrItemAlreadyExists, "another name is another object")
	cm := &Item{Type: &Type{Version: "v1", Kind: "ConfigMap", Resource: "configmaps"}, Namespace: "shop", Name: "web.18ea58fdc27a7ba1", UID: event("").UID}
	_, err = m.Add(cm)
	assert.ErrorIs(t, err, ErrItemAlreadyExists, "another kind is another object")
	_, err = m.Add(event(""))
	assert.ErrorIs(t, err, ErrItemAlreadyExists, "the same copy twice")
	_, err = m.Add(event("events.k8s.io"))
	require.NoError(t, err)
	_, err = m.Add(event("events.k8s.io"))
	assert.ErrorIs(t, err, ErrItemAlreadyExists, "the folded copy twice")
	assert.Equal(t, 1, m.Len())

	_, err = Decode(bytes.NewReader([]byte(`{"formatVersion":"1","aliases":[{"group":"","version":"v1","namespace":"n","kind":"ConfigMap","resource":"configmaps","name":"c","uid":"u"}]}`)))
	var de *DecodeError
	require.ErrorAs(t, err, &de, "an alias of nothing")
	assert.Equal(t, "/aliases/0", de.Path)
}
