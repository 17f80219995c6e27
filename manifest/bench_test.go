package manifest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

var benchSizes = []int{100_000, 1_000_000}

func BenchmarkEncode(b *testing.B) {
	for _, n := range benchSizes {
		m := sample(n)
		m.Items() // sort once, outside the measurement
		for _, gz := range []bool{false, true} {
			b.Run(fmt.Sprintf("items=%d/gzip=%v", n, gz), func(b *testing.B) {
				var w countingWriter
				for b.Loop() {
					w = 0
					var err error
					if gz {
						err = EncodeGzip(&w, m)
					} else {
						err = Encode(&w, m)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(int64(w))
				b.ReportMetric(float64(w)/float64(n), "file-bytes/item")
			})
		}
	}
}

// BenchmarkDecode reports, beside time and MB/s of the file, the heap the decoded
// manifest keeps (retained-bytes/item) and the peak heap during the decode.
func BenchmarkDecode(b *testing.B) {
	for _, n := range benchSizes {
		for _, gz := range []bool{false, true} {
			b.Run(fmt.Sprintf("items=%d/gzip=%v", n, gz), func(b *testing.B) {
				var buf bytes.Buffer
				m := sample(n)
				if gz {
					EncodeGzip(&buf, m)
				} else {
					Encode(&buf, m)
				}
				m = nil
				data := buf.Bytes()
				b.SetBytes(int64(len(data)))
				var retained uint64
				for b.Loop() {
					b.StopTimer() // collections to measure the heap are not the decoder's cost
					runtime.GC()
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					b.StartTimer()
					got, err := Decode(bytes.NewReader(data))
					if err != nil || got.Len() != n {
						b.Fatal(err, got.Len())
					}
					b.StopTimer()
					runtime.GC()
					runtime.ReadMemStats(&after)
					retained = after.HeapAlloc - before.HeapAlloc
					runtime.KeepAlive(got)
					b.StartTimer()
				}
				b.ReportMetric(float64(retained)/float64(n), "retained-bytes/item")
				b.ReportMetric(float64(retained)/(1<<20), "retained-MiB")
			})
		}
	}
}

func BenchmarkSet(b *testing.B) {
	n := 1_000_000
	a := sample(n)
	// The second manifest shares half of its identities with the first; the third none.
	c, d := New(n), New(n)
	for i, it := range a.Items() {
		cp := *it
		cp.UID = it.UID + "-c"
		if i%2 == 1 {
			cp.Name += "-c"
		}
		c.Add(&cp)
		dp := *it
		dp.UID = it.UID + "-d"
		dp.Namespace += "-d"
		d.Add(&dp)
	}
	b.Run("Build/items=1000000", func(b *testing.B) {
		for b.Loop() {
			c.set = nil
			c.Set()
		}
	})
	sa, sc, sd := a.Set(), c.Set(), d.Set()
	b.Run("Intersection/items=1000000", func(b *testing.B) {
		for b.Loop() {
			if got := sa.Intersection(sc); got.Len() != n/2 {
				b.Fatal(got.Len())
			}
		}
	})
	b.Run("Intersects/items=1000000/disjoint", func(b *testing.B) {
		for b.Loop() {
			if sa.Intersects(sd) {
				b.Fatal("disjoint sets intersect")
			}
		}
	})
}

// countingWriter discards what it is given and counts it.
type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// BenchmarkSortItems sorts a million items in canonical order from an order of their
// own: as sortItems does it (two halves at once, merged), and on one goroutine.
func BenchmarkSortItems(b *testing.B) {
	items := slices.Clone(sample(1_000_000).Items())
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	work := make([]*Item, len(items))
	for _, s := range []struct {
		name string
		sort func([]*Item)
	}{{"halves", sortItems}, {"one", func(x []*Item) { slices.SortFunc(x, compareItems) }}} {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				copy(work, items)
				s.sort(work)
			}
		})
	}
}
