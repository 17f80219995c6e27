package uidmap

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

type obj struct {
	uid types.UID
	n   int
}

func uidOf(o *obj) types.UID { return o.uid }

// The map agrees with a Go map keyed by the UID through sets, replacements and
// deletions, with real hashes and with a hash that sends many UIDs to one slot.
func TestMapAgreesWithAMap(t *testing.T) {
	for name, hash := range map[string]func(types.UID) uint64{
		"maphash":   nil,
		"colliding": func(u types.UID) uint64 { return uint64(len(u) % 3) },
	} {
		t.Run(name, func(t *testing.T) {
			m := New(0, uidOf)
			m.testHash = hash
			want := map[types.UID]*obj{}
			check := func() {
				t.Helper()
				require.Equal(t, len(want), m.Len())
				for u, o := range want {
					got, ok := m.Get(u)
					require.True(t, ok, u)
					require.Same(t, o, got, u)
				}
			}
			for step := range 400 {
				u := types.UID(fmt.Sprintf("uid-%d", step%97*(step%5+1)))
				switch step % 4 {
				case 0, 1, 2:
					o := &obj{uid: u, n: step}
					m.Set(o)
					want[u] = o
				case 3:
					m.Delete(u)
					delete(want, u)
				}
				check()
			}
			_, ok := m.Get("never-set")
			assert.False(t, ok)
		})
	}
}
