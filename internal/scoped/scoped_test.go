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

// TestCompactKeepsEveryEntry compacts between rounds of sets that overwrite compacted
// keys and add new ones, and checks the map against a plain one after each step.
func TestCompactKeepsEveryEntry(t *testing.T) {
	var m Map[scope, int]
	want := map[Key[scope]]int{}
	scopes := []scope{{"", "a"}, {"apps", "a"}, {"", "b"}}
	check := func(step string) {
		t.Helper()
		assert.Equal(t, len(want), m.Len(), step)
		for k, v := range want {
			got, ok := m.Get(k.Scope, k.Name)
			assert.True(t, ok, "%s: %v", step, k)
			assert.Equal(t, v, got, "%s: %v", step, k)
		}
		_, ok := m.Get(scopes[0], "missing")
		assert.False(t, ok, step)
		assert.Equal(t, want, maps.Collect(m.All()), step)
	}
	for round := range 4 {
		for i := range 100 {
			s, name := scopes[(i+round)%len(scopes)], fmt.Sprintf("n%d", (i*7+round*31)%80)
			m.Set(s, name, round*1000+i)
			want[Key[scope]{s, name}] = round*1000 + i
		}
		check(fmt.Sprintf("round %d, before Compact", round))
		m.Compact()
		assert.Empty(t, m.values, "Compact leaves nothing in the hash map")
		check(fmt.Sprintf("round %d, after Compact", round))
	}
}
