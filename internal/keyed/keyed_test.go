package keyed

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type obj struct {
	key string
	n   int
}

func keyOf(o *obj) string { return o.key }

// insert inserts o into m and holds the answer to want, the Go map m must agree with:
// o goes in, and into want, unless its key has a value, which Insert returns.
func insert(t *testing.T, m *Map[string, *obj], want map[string]*obj, o *obj, step int) {
	t.Helper()
	got, added := m.Insert(o)
	prev, had := want[o.key]
	require.Equal(t, !had, added, "step %d: %s", step, o.key)
	if had {
		require.Same(t, prev, got, "step %d: %s", step, o.key)
		return
	}
	require.Same(t, o, got, "step %d: %s", step, o.key)
	want[o.key] = o
}

// The map agrees with a Go map through sets of values under their own keys and under
// other keys (aliases), replacements and deletions, as the table grows, with maphash
// and with hashes that send many keys to one slot: the first, or the last, so that the
// runs of slots wrap around the table's end.
func TestMapAgreesWithAMap(t *testing.T) {
	for name, hash := range map[string]func(string) uint64{
		"maphash":   nil,
		"colliding": func(k string) uint64 { return uint64(len(k) % 3) },
		"wrapping":  func(k string) uint64 { return 0xffffffff - uint64(len(k)%3) },
	} {
		t.Run(name, func(t *testing.T) {
			m := New(0, keyOf)
			m.testHash = hash
			want := map[string]*obj{}
			check := func(step int) {
				t.Helper()
				require.Equal(t, len(want), m.Len(), "step %d", step)
				all := map[string]*obj{}
				for k, o := range m.All() {
					require.NotContains(t, all, k, "step %d: %s twice", step, k)
					all[k] = o
				}
				require.Equal(t, want, all, "step %d", step)
				for k, o := range want {
					got, ok := m.Get(k)
					require.True(t, ok, "step %d: %s", step, k)
					require.Same(t, o, got, "step %d: %s", step, k)
				}
			}
			key := func(i int) string { return fmt.Sprintf("k-%d", i%53*(i%7+1)) }
			for step := range 1000 {
				k := key(step)
				switch step % 5 {
				case 0, 1: // its own value
					o := &obj{key: k, n: step}
					m.Set(k, o)
					want[k] = o
				case 2: // its own value, unless the key has one
					insert(t, m, want, &obj{key: k, n: step}, step)
				case 3: // another key's value
					o := &obj{key: key(step * 31), n: step}
					m.Set(k, o)
					want[k] = o
				case 4:
					m.Delete(k)
					delete(want, k)
				}
				check(step)
			}
			_, ok := m.Get("never-set")
			assert.False(t, ok)
		})
	}
}

// FuzzMap runs the operations the input spells (a byte an operation: which, and on
// which of 64 keys) against a Map and a Go map, with a hash the input also chooses, and
// checks they agree after each.
func FuzzMap(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 64, 65, 128, 129, 192, 193, 5, 69, 133})
	f.Add([]byte{1, 0xff, 0x40, 0x80, 0xc0, 0x3f, 0x7f, 0xbf})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		hashes := []func(string) uint64{
			nil,
			func(k string) uint64 { return uint64(len(k) % 2) },
			func(k string) uint64 { return 0xffffffff - uint64(k[len(k)-1]%4) },
		}
		m := New(int(ops[0]%4), keyOf)
		m.testHash = hashes[int(ops[0]/4)%len(hashes)]
		want := map[string]*obj{}
		key := func(b byte) string { return fmt.Sprintf("k%d", b%64) }
		for step, op := range ops[1:] {
			k := key(op)
			switch op >> 6 {
			case 0: // its own value
				o := &obj{key: k, n: step}
				m.Set(k, o)
				want[k] = o
			case 1: // its own value, unless the key has one
				insert(t, m, want, &obj{key: k, n: step}, step)
			case 2: // another key's value
				o := &obj{key: key(op + 7), n: step}
				m.Set(k, o)
				want[k] = o
			case 3:
				m.Delete(k)
				delete(want, k)
			}
			require.Equal(t, len(want), m.Len(), "step %d", step)
			for k, o := range want {
				got, ok := m.Get(k)
				require.True(t, ok, "step %d: %s", step, k)
				require.Same(t, o, got, "step %d: %s", step, k)
			}
			n := 0
			for k, o := range m.All() {
				require.Same(t, want[k], o, "step %d: %s", step, k)
				n++
			}
			require.Equal(t, len(want), n, "step %d", step)
		}
	})
}

// InsertAll keeps what Insert one value at a time keeps, with hashes spread, colliding
// and wrapping around the table's end, at sizes from none to more than the buckets of
// its sort; with a key given twice, or a map not empty, it keeps nothing and leaves the
// map as it was, usable.
func TestInsertAll(t *testing.T) {
	for name, hash := range map[string]func(string) uint64{
		"maphash":   nil,
		"colliding": func(k string) uint64 { return uint64(len(k) % 3) },
		"wrapping":  func(k string) uint64 { return 0xffffffff - uint64(len(k)%3) },
	} {
		sizes := []int{0, 1, 7, 100, 300}
		if hash == nil { // colliding hashes make the probes quadratic
			sizes = append(sizes, 5000)
		}
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				vals := make([]*obj, n)
				for i := range vals {
					vals[i] = &obj{key: fmt.Sprintf("k-%d", i), n: i}
				}
				for _, hint := range []int{0, n} {
					m := New(hint, keyOf)
					m.testHash = hash
					require.True(t, m.InsertAll(vals))
					require.Equal(t, n, m.Len())
					for _, o := range vals {
						got, ok := m.Get(o.key)
						require.True(t, ok, o.key)
						require.Same(t, o, got, o.key)
					}
					_, ok := m.Get("never-set")
					assert.False(t, ok)
					if n > 0 {
						assert.False(t, m.InsertAll(vals[:1]), "a map not empty")
						assert.Equal(t, n, m.Len())
					}
				}
				if n == 0 {
					return
				}
				// A repeat anywhere: nothing kept, and the map still takes values.
				for _, at := range []int{0, n / 2, n - 1} {
					twice := append(append([]*obj{}, vals...), &obj{key: vals[at].key, n: -1})
					m := New(n, keyOf)
					m.testHash = hash
					require.False(t, m.InsertAll(twice), "repeat of %d", at)
					require.Equal(t, 0, m.Len())
					for _, o := range twice {
						_, ok := m.Get(o.key)
						require.False(t, ok, o.key)
					}
					require.True(t, m.InsertAll(vals))
					require.Equal(t, n, m.Len())
				}
			})
		}
	}
}
