package keyed

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"
)

// BenchmarkMap fills a Map with a million values keyed by UID, at the size given and
// growing from empty, then looks each up: the heap it keeps a key (the values' own
// bytes not counted) and the time a Set and a Get take.
func BenchmarkMap(b *testing.B) {
	const n = 1_000_000
	objs := make([]obj, n)
	for i := range objs {
		objs[i] = obj{key: uuid.NewString(), n: i}
	}
	for _, hint := range []int{n, 0} {
		b.Run(fmt.Sprintf("hint=%d", hint), func(b *testing.B) {
			var set, get, kept float64
			for b.Loop() {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				start := time.Now()
				m := New(hint, keyOf)
				for i := range objs {
					m.Set(objs[i].key, &objs[i])
				}
				set += float64(time.Since(start).Nanoseconds())
				start = time.Now()
				for i := range objs {
					if o, ok := m.Get(objs[i].key); !ok || o != &objs[i] {
						b.Fatal("lost", i)
					}
				}
				get += float64(time.Since(start).Nanoseconds())
				runtime.GC()
				runtime.ReadMemStats(&after)
				kept += float64(after.HeapAlloc - before.HeapAlloc)
				runtime.KeepAlive(m)
			}
			runs := float64(b.N)
			b.ReportMetric(set/runs/n, "ns/set")
			b.ReportMetric(get/runs/n, "ns/get")
			b.ReportMetric(kept/runs/n, "B/key")
		})
	}
}

// BenchmarkFill fills an empty Map, sized for them, with a million values keyed by UID:
// one Insert a value, in the values' order, against InsertAll. ns/value is the time a
// value takes.
func BenchmarkFill(b *testing.B) {
	const n = 1_000_000
	objs := make([]*obj, n)
	for i := range objs {
		objs[i] = &obj{key: uuid.NewString(), n: i}
	}
	fills := []struct {
		name string
		fill func(m *Map[string, *obj]) bool
	}{
		{"insert", func(m *Map[string, *obj]) bool {
			for _, o := range objs {
				if _, ok := m.Insert(o); !ok {
					return false
				}
			}
			return true
		}},
		{"all", func(m *Map[string, *obj]) bool { return m.InsertAll(objs) }},
	}
	for _, f := range fills {
		b.Run(f.name, func(b *testing.B) {
			var took time.Duration
			for b.Loop() {
				m := New(n, keyOf)
				start := time.Now()
				if !f.fill(m) || m.Len() != n {
					b.Fatal("not filled")
				}
				took += time.Since(start)
			}
			b.ReportMetric(float64(took.Nanoseconds())/float64(b.N)/n, "ns/value")
		})
	}
}
