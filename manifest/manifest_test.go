package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

func item(group, version, kind, resource, ns, name, uid string, owners ...string) *Item {
	it := &Item{Type: &Type{Group: group, Version: version, Kind: kind, Resource: resource}, Namespace: ns, Name: name, UID: types.UID(uid)}
	for _, o := range owners {
		it.OwnerUIDs = append(it.OwnerUIDs, types.UID(o))
	}
	return it
}

func TestAdd(t *testing.T) {
	tests := []struct {
		name    string
		second  *Item
		added   bool
		wantErr error
		invalid string // field named by an InvalidItemError
	}{
		{"distinct item", item("apps", "v1", "Deployment", "deployments", "a", "web", "u2"), true, nil, ""},
		{"same uid", item("apps", "v1", "Deployment", "deployments", "a", "other", "u1"), false, ErrItemAlreadyExists, ""},
		{"same identity at another version", item("apps", "v1beta1", "Deployment", "deployments", "a", "api", "u3"), false, ErrItemAlreadyExists, ""},
		{"same name in another namespace", item("apps", "v1", "Deployment", "deployments", "b", "api", "u4"), true, nil, ""},
		{"same name, other resource", item("apps", "v1", "StatefulSet", "statefulsets", "a", "api", "u5"), true, nil, ""},
		{"missing uid", item("apps", "v1", "Deployment", "deployments", "a", "x", ""), false, nil, "uid"},
		{"missing resource", item("apps", "v1", "Deployment", "", "a", "x", "u6"), false, nil, "resource"},
		{"missing name", item("apps", "v1", "Deployment", "deployments", "a", "", "u7"), false, nil, "name"},
		{"no type", &Item{Namespace: "a", Name: "x", UID: "u8"}, false, nil, "type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m Manifest // the zero value is usable
			ok, err := m.Add(item("apps", "v1", "Deployment", "deployments", "a", "api", "u1"))
			require.True(t, ok)
			require.NoError(t, err)

			ok, err = m.Add(tc.second)
			assert.Equal(t, tc.added, ok)
			switch {
			case tc.wantErr != nil:
				assert.ErrorIs(t, err, tc.wantErr)
			case tc.invalid != "":
				var ie *InvalidItemError
				require.ErrorAs(t, err, &ie)
				assert.Equal(t, tc.invalid, ie.Field)
			default:
				assert.NoError(t, err)
			}
			want := 1
			if tc.added {
				want = 2
			}
			assert.Equal(t, want, m.Len(), "a refused item must not be recorded")
			if got, found := m.ByUID(tc.second.UID); !tc.added && found {
				assert.NotSame(t, tc.second, got, "a refused item must not be found by its UID")
			}
		})
	}
}

func TestCanonicalOrderAndGroups(t *testing.T) {
	all := []*Item{
		item("apps", "v1", "Deployment", "deployments", "b", "z", "1"),
		item("", "v1", "ConfigMap", "configmaps", "b", "cm", "2"),
		item("", "v1", "Namespace", "namespaces", "", "b", "3"),
		item("apps", "v1", "Deployment", "deployments", "a", "y", "4"),
		item("", "v1", "Secret", "secrets", "b", "s", "5"),
		item("cluster.x-k8s.io", "v1beta1", "Cluster", "clusters", "b", "c", "6"),
	}
	want := []string{"3", "2", "5", "4", "1", "6"}
	for seed := range 5 {
		perm := slices.Clone(all)
		// a deterministic shuffle per seed
		for i := range perm {
			j := (i*7 + seed*3) % len(perm)
			perm[i], perm[j] = perm[j], perm[i]
		}
		var m Manifest
		for _, it := range perm {
			_, err := m.Add(it)
			require.NoError(t, err)
		}
		var got []string
		for it := range m.All() {
			got = append(got, string(it.UID))
		}
		assert.Equal(t, want, got, "seed %d", seed)
		for i, it := range m.Items() {
			pos, ok := m.Index(it)
			assert.True(t, ok)
			assert.Equal(t, i, pos, "Index of %s", it)
		}
		stranger := *m.Items()[2] // the same identity, not the manifest's item
		_, ok := m.Index(&stranger)
		assert.False(t, ok, "an item the manifest does not hold has no index")

		var groups []string
		for g := range m.Groups() {
			groups = append(groups, fmt.Sprintf("%s/%s/%s:%d", g.Group, g.Version, g.Namespace, len(g.Items)))
		}
		assert.Equal(t, []string{"/v1/:1", "/v1/b:2", "apps/v1/a:1", "apps/v1/b:1", "cluster.x-k8s.io/v1beta1/b:1"}, groups)
	}
}

func TestOwnersChildrenDangling(t *testing.T) {
	var m Manifest
	for _, it := range []*Item{
		item("apps", "v1", "Deployment", "deployments", "a", "web", "d"),
		item("apps", "v1", "ReplicaSet", "replicasets", "a", "web-1", "rs1", "d"),
		item("apps", "v1", "ReplicaSet", "replicasets", "a", "web-2", "rs2", "d", "gone"),
		item("", "v1", "Pod", "pods", "a", "web-1-x", "p", "rs1"),
	} {
		_, err := m.Add(it)
		require.NoError(t, err)
	}
	rs2, _ := m.ByUID("rs2")
	owners, dangling := m.Owners(rs2)
	require.Len(t, owners, 1)
	assert.Equal(t, types.UID("d"), owners[0].UID)
	assert.Equal(t, []types.UID{"gone"}, dangling)

	var kids []string
	for _, c := range m.Children("d") {
		kids = append(kids, c.Name)
	}
	assert.Equal(t, []string{"web-1", "web-2"}, kids)
	assert.Empty(t, m.Children("p"))

	d := m.Dangling()
	require.Len(t, d, 1)
	assert.Equal(t, "web-2", d[0].Item.Name)
	assert.Equal(t, types.UID("gone"), d[0].OwnerUID)

	// Children sees items added after it was first asked.
	_, err := m.Add(item("", "v1", "Pod", "pods", "a", "web-1-y", "p2", "rs1"))
	require.NoError(t, err)
	assert.Len(t, m.Children("rs1"), 2)
}

func TestSetIgnoresVersion(t *testing.T) {
	a, b := New(0), New(0)
	mustAdd(t, a, item("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "n", "h", "1"))
	mustAdd(t, a, item("", "v1", "ConfigMap", "configmaps", "n", "only-a", "2"))
	mustAdd(t, b, item("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "n", "h", "x1"))
	mustAdd(t, b, item("", "v1", "ConfigMap", "configmaps", "other", "only-a", "x2"))

	hpa := ID{Group: "autoscaling", Resource: "horizontalpodautoscalers", Namespace: "n", Name: "h"}
	shared := Intersect(a, b)
	assert.Equal(t, []ID{hpa}, shared.IDs())
	assert.True(t, a.Set().Intersects(b.Set()))
	assert.True(t, shared.Has(hpa))

	c := New(0)
	mustAdd(t, c, item("", "v1", "ConfigMap", "configmaps", "n", "h", "y")) // same name, other resource
	assert.False(t, a.Set().Intersects(c.Set()))
	assert.Zero(t, Intersect(a, c).Len())

	// The cached set follows later additions.
	mustAdd(t, c, item("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "n", "h", "z"))
	assert.True(t, a.Set().Intersects(c.Set()))
}

// TestSetAlgebra checks the merge-based operations against a map-based model on
// random sets, including sets whose identities differ only in one field.
func TestSetAlgebra(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	randomIDs := func(n int) []ID {
		out := make([]ID, n)
		for i := range out {
			out[i] = ID{Group: []string{"", "apps"}[rng.IntN(2)], Resource: []string{"pods", "secrets"}[rng.IntN(2)],
				Namespace: []string{"", "a", "b"}[rng.IntN(3)], Name: fmt.Sprint(rng.IntN(20))}
		}
		return out
	}
	model := func(ids []ID) map[ID]bool {
		m := map[ID]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	for round := range 200 {
		x, y := randomIDs(rng.IntN(60)), randomIDs(rng.IntN(60))
		sx, sy := NewSet(x...), NewSet(y...)
		mx, my := model(x), model(y)
		var inter, union, diff []ID
		for id := range mx {
			union = append(union, id)
			if my[id] {
				inter = append(inter, id)
			} else {
				diff = append(diff, id)
			}
		}
		for id := range my {
			if !mx[id] {
				union = append(union, id)
			}
		}
		for _, ids := range [][]ID{inter, union, diff} {
			slices.SortFunc(ids, ID.Compare)
		}
		assert.Equal(t, len(mx), sx.Len(), "round %d", round)
		assert.Equal(t, inter, nilIfEmpty(sx.Intersection(sy).IDs()), "round %d", round)
		assert.Equal(t, union, nilIfEmpty(sx.Union(sy).IDs()), "round %d", round)
		assert.Equal(t, diff, nilIfEmpty(sx.Difference(sy).IDs()), "round %d", round)
		assert.Equal(t, len(inter) > 0, sx.Intersects(sy), "round %d", round)
		for _, id := range y {
			assert.Equal(t, mx[id], sx.Has(id))
		}
		assert.Equal(t, sx.IDs(), CollectSet(len(x)/2, slices.Values(x)).IDs(), "round %d: CollectSet makes NewSet's set", round)
	}
}

func nilIfEmpty(ids []ID) []ID {
	if len(ids) == 0 {
		return nil
	}
	return ids
}

func TestPairsMatchSelectors(t *testing.T) {
	p := PairsFromMap(map[string]string{"tier": "web", "app": "shop", "env": "prod"})
	assert.Equal(t, "app=shop,env=prod,tier=web", p.String())
	for _, tc := range []struct {
		sel  string
		want bool
	}{
		{"app=shop", true}, {"app=shop,tier!=db", true}, {"env in (dev)", false},
		{"missing", false}, {"!missing", true}, {"tier", true},
	} {
		sel, err := labels.Parse(tc.sel)
		require.NoError(t, err)
		assert.Equal(t, tc.want, sel.Matches(p), tc.sel)
	}
	v, ok := p.Lookup("env")
	assert.True(t, ok)
	assert.Equal(t, "prod", v)
	assert.Equal(t, map[string]string{"tier": "web", "app": "shop", "env": "prod"}, p.Map())
	assert.Nil(t, PairsFromMap(nil))
}

func mustAdd(t testing.TB, m *Manifest, it *Item) {
	t.Helper()
	if _, err := m.Add(it); err != nil {
		t.Fatal(err)
	}
}

func TestErrorsAreTyped(t *testing.T) {
	var m Manifest
	mustAdd(t, &m, item("", "v1", "ConfigMap", "configmaps", "n", "a", "1"))
	_, err := m.Add(item("", "v1", "ConfigMap", "configmaps", "n", "a", "2"))
	assert.True(t, errors.Is(err, ErrItemAlreadyExists))
	assert.Contains(t, err.Error(), "configmaps/n/a")
}

// Many items, sorted in halves and merged, come out in canonical order, each once.
func TestSortItemsInHalves(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	items := make([]*Item, 1<<16+7)
	for i := range items {
		items[i] = &Item{Type: &Type{Group: []string{"", "apps", "batch"}[rng.IntN(3)], Version: "v1", Resource: "r"},
			Namespace: fmt.Sprint("ns-", rng.IntN(50)), Name: fmt.Sprint("n-", rng.IntN(1<<15))}
	}
	want := slices.Clone(items)
	slices.SortStableFunc(want, compareItems)
	got := slices.Clone(items)
	sortItems(got)
	require.True(t, slices.IsSortedFunc(got, compareItems))
	seen := map[*Item]int{}
	for _, it := range got {
		seen[it]++
	}
	require.Len(t, seen, len(items), "each item once")
	for i := range want {
		require.Zero(t, compareItems(want[i], got[i]), "at %d", i)
	}
}

// An item encodes as it did when its group, version, kind and resource were its own
// fields: its Type's fields are inlined, and an item with no Type has none.
func TestItemJSONInlinesItsType(t *testing.T) {
	it := item("apps", "v1", "Deployment", "deployments", "shop", "web", "u1")
	got, err := json.Marshal(it)
	require.NoError(t, err)
	assert.JSONEq(t, `{"group":"apps","version":"v1","kind":"Deployment","resource":"deployments","namespace":"shop","name":"web","uid":"u1"}`, string(got))
	var back Item
	require.NoError(t, json.Unmarshal(got, &back))
	assert.Equal(t, it, &back)
}

// AddAll leaves a manifest as Add, one item after another, leaves it, and stops at the
// same item with the same error: over items drawn from few names and UIDs (so that
// identities and UIDs repeat), objects served under two groups (folded), invalid items,
// into empty manifests (the zero value, with room and without) and into ones that hold
// items already.
func TestAddAllAgreesWithAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	draw := func(n, names int) []*Item {
		items := make([]*Item, n)
		for i := range items {
			k := rng.IntN(names)
			switch rng.IntN(20) {
			case 0: // the same object in the other events group: folded
				items[i] = event([]string{"", "events.k8s.io"}[rng.IntN(2)])
			case 1:
				items[i] = item("", "v1", "ConfigMap", "configmaps", "shop", "cm", "") // no UID
			case 2:
				items[i] = &Item{Namespace: "shop", Name: "typeless", UID: "u-typeless"}
			default:
				items[i] = item("apps", "v1", "Deployment", "deployments", fmt.Sprintf("ns-%d", k%3),
					fmt.Sprintf("d-%d", k), fmt.Sprintf("u-%d", rng.IntN(names)))
			}
		}
		return items
	}
	for trial := range 600 {
		n, names := rng.IntN(40), 2+rng.IntN(200)
		if trial%3 == 0 {
			names = 1 << 20 // most sets repeat nothing: the tables are filled at once
		}
		items, before := draw(n, names), draw(rng.IntN(3)*(trial%2), names)
		byAdd, byAddAll := &Manifest{}, &Manifest{} // the zero value, or made with room or none
		if room := rng.IntN(3); room > 0 {
			byAdd, byAddAll = New((room-1)*n), New((room-1)*n)
		}
		for _, it := range before {
			_, errAdd := byAdd.Add(it)
			_, errAll := byAddAll.Add(it)
			require.Equal(t, errAdd, errAll)
		}
		want, wantErr := -1, error(nil)
		for i, it := range items {
			if _, err := byAdd.Add(it); err != nil {
				want, wantErr = i, err
				break
			}
		}
		got, err := byAddAll.AddAll(items)
		require.Equal(t, want, got, "trial %d", trial)
		if wantErr == nil {
			require.NoError(t, err, "trial %d", trial)
		} else {
			require.EqualError(t, err, wantErr.Error(), "trial %d", trial)
		}
		require.Equal(t, byAdd.Items(), byAddAll.Items(), "trial %d", trial)
		for _, it := range append(before, items...) {
			a, okA := byAdd.ByUID(it.UID)
			b, okB := byAddAll.ByUID(it.UID)
			require.True(t, okA == okB && a == b, "trial %d: uid %s", trial, it.UID)
			if it.Type != nil {
				a, okA = byAdd.Get(it.ID())
				b, okB = byAddAll.Get(it.ID())
				require.True(t, okA == okB && a == b, "trial %d: %s", trial, it.ID())
			}
			require.Equal(t, byAdd.Aliases(it.UID), byAddAll.Aliases(it.UID), "trial %d: uid %s", trial, it.UID)
		}
	}
}
