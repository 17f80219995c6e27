package jsontree

import (
	"bytes"
	stdjson "encoding/json"
	"testing"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"

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

// The byte slices of a tree (Bytes) go back with its maps on Release, and are made
// again for a tree after it; a dropped tree's are not.
func TestBytesGoBackWithTheTree(t *testing.T) {
	_, made, err := ObjectMaps([]byte(`{"a":1}`))
	require.NoError(t, err)
	b := made.Bytes(40)
	assert.Empty(t, b)
	assert.GreaterOrEqual(t, cap(b), 40)
	b = append(b, "kept"...)
	made.Drop()
	reused := false
	for range 20 {
		_, again, err := ObjectMaps([]byte(`{"b":2}`))
		require.NoError(t, err)
		c := again.Bytes(16)
		require.GreaterOrEqual(t, cap(c), 16)
		c = append(c, "next"...)
		if &c[0] == &b[0] {
			t.Fatal("a dropped tree's bytes were made again")
		}
		again.Release()
		_, third, err := ObjectMaps([]byte(`{"c":3}`))
		require.NoError(t, err)
		d := third.Bytes(8)
		reused = reused || cap(d) > 0 && &d[:1][0] == &c[0]
		third.Drop()
	}
	assert.Equal(t, "kept", string(b))
	assert.True(t, reused, "no released tree's bytes were made again")
	var none *Maps
	assert.GreaterOrEqual(t, cap(none.Bytes(5)), 5, "a nil Maps makes them")
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

// ObjectMapsUnread decodes the top level and metadata as ObjectMaps does and keeps every
// other member that is an object as its JSON; encoded again (by the package,
// encoding/json or json/v2), an object comes out as its fully decoded tree does, where
// the backup's JSON is compact, as a backup's is.
func TestObjectMapsUnreadKeepsObjectsAsTheirJSON(t *testing.T) {
	doc := []byte(`{"apiVersion":"apps/v1","data":{"a":"1","b":{"c":[1,2.5,null,true]}},"kind":"Deployment","list":[{"x":1}],"metadata":{"labels":{"app":"web"},"name":"web","uid":"u1"},"n":7,"spec":{"replicas":3,"template":{"spec":{"containers":[{"image":"i","name":"c"}]}}},"status":{}}`)
	want, wantMaps, err := ObjectMaps(doc)
	require.NoError(t, err)
	defer wantMaps.Drop()
	got, maps, err := ObjectMapsUnread(doc, "")
	require.NoError(t, err)
	defer maps.Drop()
	without, withoutMaps, err := ObjectMapsUnread(doc, "status")
	require.NoError(t, err)
	defer withoutMaps.Drop()
	assert.NotContains(t, without, "status", "left out")
	assert.Equal(t, got["spec"], without["spec"])
	assert.Len(t, without, len(got)-1)

	assert.Equal(t, want["metadata"], got["metadata"], "metadata is decoded")
	assert.Equal(t, want["list"], got["list"], "a list is decoded")
	assert.Equal(t, int64(7), got["n"])
	for _, k := range []string{"data", "spec", "status"} {
		require.IsType(t, Raw(nil), got[k], k)
		var fromRaw map[string]any
		require.NoError(t, kjson.Unmarshal(got[k].(Raw), &fromRaw), k)
		assert.Equal(t, want[k], fromRaw, k)
	}
	wantJSON, err := Marshal(want)
	require.NoError(t, err)
	gotJSON, err := Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, string(wantJSON), string(gotJSON))
	assert.Equal(t, string(wantJSON), string(gotJSON), "byte for byte, for compact input")
	cut, cuts, err := MarshalCut(nil, got, &CutSpec{Outer: "metadata", Names: []string{"name", "uid"}}, nil)
	require.NoError(t, err)
	wantCut, wantCuts, err := MarshalCut(nil, want, &CutSpec{Outer: "metadata", Names: []string{"name", "uid"}}, nil)
	require.NoError(t, err)
	assert.Equal(t, string(wantCut), string(cut))
	assert.Equal(t, wantCuts, cuts)

	std, err := stdjson.Marshal(got)
	require.NoError(t, err)
	assert.Equal(t, string(wantJSON), string(std), "encoding/json, through MarshalJSON")
	v2, err := jsonv2.Marshal(got, jsonv1.DefaultOptionsV1())
	require.NoError(t, err)
	assert.Equal(t, string(wantJSON), string(v2), "json/v2 with encoding/json's options")
}

// A value ObjectMapsUnread keeps as its JSON is the data's own bytes, not a copy, with
// no room past its end: an append to it cannot write over what follows it in the data.
func TestObjectMapsUnreadKeepsTheDataItself(t *testing.T) {
	doc := []byte(`{"apiVersion":"v1","data":{"a":"1"},"kind":"ConfigMap","metadata":{"name":"c"},"spec":{"b":[2]},"status":{"x":1}}`)
	got, maps, err := ObjectMapsUnread(doc, "status")
	require.NoError(t, err)
	defer maps.Drop()
	data := got["data"].(Raw)
	require.Equal(t, `{"a":"1"}`, string(data))
	at := bytes.Index(doc, []byte(`{"a":"1"}`))
	assert.Same(t, &doc[at], &data[0], "the data's own bytes")
	assert.Equal(t, len(data), cap(data), "no room to append into what follows")
	before := string(doc)
	_ = append(data, '!')
	assert.Equal(t, before, string(doc))
}

// What ObjectMaps refuses, ObjectMapsUnread refuses, in a member it keeps as JSON too.
func TestObjectMapsUnreadRefusesWhatObjectMapsRefuses(t *testing.T) {
	for _, doc := range []string{`{"spec":{"a":1,}}`, `{"spec":{"a":01}}`, `{"spec":{a:1}}`, `{"spec":{"a":1}`, `{"spec":{"a":"\x"}}`, `{"spec":{"a":1}} x`} {
		_, _, err := ObjectMaps([]byte(doc))
		require.Error(t, err, doc)
		_, _, err = ObjectMapsUnread([]byte(doc), "")
		assert.Error(t, err, doc)
		_, _, err = ObjectMapsUnread([]byte(doc), "spec")
		assert.Error(t, err, "%s, the member left out", doc)
	}
}
