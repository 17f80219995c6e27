package scoped

import (
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestCompactMerge appends keys, some more than once and some also set, and checks that
// merge sees each key's values in the order they were set and appended, and that the
// compacted map then holds what merge kept.
func TestCompactMerge(t *testing.T) {
	var m Map[scope, string]
	want := map[Key[scope]]string{}
	scopes := []scope{{"", "a"}, {"apps", "a"}, {"", "b"}}
	m.Set(scopes[1], "n3", "set")
	want[Key[scope]{scopes[1], "n3"}] = "set"
	for i := range 200 {
		s, name := scopes[(i/5)%len(scopes)], fmt.Sprintf("n%d", (i*7)%60)
		v := fmt.Sprint(i)
		m.Append(s, name, v)
		k := Key[scope]{s, name}
		if prev, ok := want[k]; ok {
			v = prev + "," + v
		}
		want[k] = v
	}
	m.Append(scopes[2], "replaced", "before")
	m.ReplaceLast("after")
	want[Key[scope]{scopes[2], "replaced"}] = "after"
	_, ok := m.Get(scopes[0], "n0")
	assert.False(t, ok, "appended keys wait for CompactMerge")
	merges := 0
	require.NoError(t, m.CompactMerge(func(k Key[scope], kept, next string) (string, error) {
		merges++
		return kept + "," + next, nil
	}))
	assert.Equal(t, 202-len(want), merges)
	assert.Equal(t, len(want), m.Len())
	for k, v := range want {
		got, ok := m.Get(k.Scope, k.Name)
		assert.True(t, ok, "%v", k)
		assert.Equal(t, v, got, "%v", k)
	}
	assert.Equal(t, want, maps.Collect(m.All()))

	// An error leaves the map as it was, appended keys waiting.
	m.Append(scopes[2], "new", "x")
	m.Append(scopes[0], "n0", "again")
	stop := errors.New("stop")
	assert.Same(t, stop, m.CompactMerge(func(Key[scope], string, string) (string, error) { return "", stop }))
	assert.Equal(t, want, maps.Collect(m.All()))
	require.NoError(t, m.CompactMerge(func(_ Key[scope], kept, next string) (string, error) { return next, nil }))
	v, _ := m.Get(scopes[0], "n0")
	assert.Equal(t, "again", v)
	v, _ = m.Get(scopes[2], "new")
	assert.Equal(t, "x", v)
}
