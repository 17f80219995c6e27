package jsontree

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kjson "k8s.io/apimachinery/pkg/util/json"
)

// identity is what tells one map from another: a map is a pointer.
func identity(m map[string]any) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&m)) }

// mapsOf adds every map of the tree v to into, by identity, and reports whether none was
// there already: false when a map is in the tree twice.
func mapsOf(v any, into map[unsafe.Pointer]bool) bool {
	switch v := v.(type) {
	case map[string]any:
		p := identity(v)
		if into[p] {
			return false
		}
		into[p] = true
		once := true
		for _, e := range v {
			once = mapsOf(e, into) && once
		}
		return once
	case []any:
		once := true
		for _, e := range v {
			once = mapsOf(e, into) && once
		}
		return once
	}
	return true
}

// The maps of a tree given back go to the objects decoded after it, each to one of them,
// cleared: the maps a decode made are listed once, whatever the tree became (a map
// moved within it, or taken out of it), and each object decodes as util/json decodes
// it.
func TestReleasedMapsGoToOneObjectEach(t *testing.T) {
	const doc = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}},"spec":{"containers":[{"name":"app","ports":[{"containerPort":8080}]}],"nodeName":"n"},"status":{"phase":"Running"}}`
	var want map[string]any
	require.NoError(t, kjson.Unmarshal([]byte(doc), &want))
	used := false
	for range 20 { // a pool may drop what it is given (it does, at random, under the race detector)
		old, made, err := ObjectMaps([]byte(doc))
		require.NoError(t, err)
		assert.Equal(t, want, old)
		// As the restore changes an object: a map moved, one taken out.
		old["metadata"].(map[string]any)["annotations"] = old["spec"].(map[string]any)["containers"].([]any)[0]
		delete(old, "status")
		before := map[unsafe.Pointer]bool{}
		mapsOf(old, before)
		made.Release()

		one, err := Object([]byte(doc))
		require.NoError(t, err)
		two, err := Object([]byte(`{"c":{"y":4}}`))
		require.NoError(t, err)
		seen := map[unsafe.Pointer]bool{}
		require.True(t, mapsOf(one, seen) && mapsOf(two, seen), "a map given back twice is in two places")
		assert.Equal(t, want, one)
		assert.Equal(t, map[string]any{"c": map[string]any{"y": int64(4)}}, two)
		for p := range seen {
			used = used || before[p]
		}
	}
	assert.True(t, used, "no map given back was used again")
}

// A tree something may still hold is dropped: none of its maps is used again.
func TestDroppedMapsAreNotUsedAgain(t *testing.T) {
	for range 20 {
		kept, made, err := ObjectMaps([]byte(`{"a":{"b":{"c":1}}}`))
		require.NoError(t, err)
		made.Drop()
		for range 5 {
			_, err := Object([]byte(`{"x":{"y":{"z":2}}}`))
			require.NoError(t, err)
		}
		assert.Equal(t, map[string]any{"a": map[string]any{"b": map[string]any{"c": int64(1)}}}, kept)
	}
}

// A decode that fails lists nothing to give back.
func TestObjectMapsOfBadJSON(t *testing.T) {
	m, made, err := ObjectMaps([]byte(`{"a":{"b":`))
	assert.Error(t, err)
	assert.Nil(t, m)
	assert.Nil(t, made)
}

// A copy is deep: changing it leaves the tree it was made of as it was. Its maps are
// listed with the tree's, and go back with them.
func TestCopyIsDeepAndGoesBackWithTheTree(t *testing.T) {
	const doc = `{"metadata":{"name":"web","labels":{"app":"web"},"ownerReferences":[{"uid":"u","kind":"ReplicaSet"}]}}`
	tree, made, err := ObjectMaps([]byte(doc))
	require.NoError(t, err)
	listed := len(made.made)
	md := made.Copy(tree["metadata"]).(map[string]any)
	assert.Equal(t, tree["metadata"], md)
	assert.Equal(t, listed+3, len(made.made), "the copy's three maps are listed")
	md["labels"].(map[string]any)["app"] = "changed"
	md["ownerReferences"].([]any)[0].(map[string]any)["uid"] = "changed"
	top := made.Map(1)
	top["metadata"] = md
	var want map[string]any
	require.NoError(t, kjson.Unmarshal([]byte(doc), &want))
	assert.Equal(t, want, tree, "the tree copied")
	assert.Equal(t, listed+4, len(made.made))
	made.Release()
}

// A map given back is made again at the size it was made at, whatever it holds when
// given back: a table made for more than eight members that holds four is not made a
// small map (which would then stay a table of two groups, cleared slot by slot), but a
// map of its own size.
func TestReleasedMapsKeepTheSizeTheyWereMadeAt(t *testing.T) {
	const medium = `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10}`
	used := false
	for range 20 { // a pool may drop what it is given (it does, at random, under the race detector)
		tree, made, err := ObjectMaps([]byte(medium))
		require.NoError(t, err)
		for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
			delete(tree, k)
		}
		table := identity(tree)
		made.Release()

		small, err := Object([]byte(`{"x":{"y":1},"z":{"w":2}}`))
		require.NoError(t, err)
		seen := map[unsafe.Pointer]bool{}
		mapsOf(small, seen)
		require.False(t, seen[table], "a table given back holding four members was made a small map")
		again, err := Object([]byte(medium))
		require.NoError(t, err)
		used = used || identity(again) == table
	}
	assert.True(t, used, "the table given back was not made a map of its size again")
}

// A small map that was filled to a full group may have become a table (an assignment to
// a full group makes one): it goes to neither pool.
func TestAFullSmallMapIsNotGivenBack(t *testing.T) {
	const seven = `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7}`
	for range 20 {
		tree, made, err := ObjectMaps([]byte(seven))
		require.NoError(t, err)
		tree["h"] = 8
		tree["a"] = 0 // a full group: now a table
		full := identity(tree)
		made.Release()
		for _, doc := range []string{`{"x":1}`, `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10}`} {
			again, err := Object([]byte(doc))
			require.NoError(t, err)
			require.NotEqual(t, full, identity(again), "a full small map given back was used again for %s", doc)
		}
	}
}
