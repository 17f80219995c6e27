package scoped

import (
	"fmt"
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
)

type scope struct{ group, namespace string }

// TestMatchesAPlainMap sets and overwrites keys across scopes, in scope order and out of
// it, and checks every lookup and the iteration against a plain map of the whole keys.
func TestMatchesAPlainMap(t *testing.T) {
	var m Map[scope, int] // the zero value is ready
	want := map[Key[scope]]int{}
	set := func(s scope, name string, v int) {
		m.Set(s, name, v)
		want[Key[scope]{s, name}] = v
	}
	scopes := []scope{{"", "a"}, {"apps", "a"}, {"", "b"}, {"", ""}}
	for i := range 300 {
		s := scopes[(i/7)%len(scopes)] // runs of one scope, as a backup's entries come
		set(s, fmt.Sprintf("n%d", i%50), i)
	}
	set(scopes[0], "n1", -1) // back to an earlier scope, overwriting
	assert.Equal(t, len(want), m.Len())
	for k, v := range want {
		got, ok := m.Get(k.Scope, k.Name)
		assert.True(t, ok, "%v", k)
		assert.Equal(t, v, got, "%v", k)
	}
	_, ok := m.Get(scope{"", "a"}, "missing")
	assert.False(t, ok)
	_, ok = m.Get(scope{"none", "a"}, "n1")
	assert.False(t, ok, "a scope never set")
	assert.Equal(t, want, maps.Collect(m.All()))
}
