package admission

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/restoregraph/restoregraph/manifest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func cm(ns, name string) manifest.ID {
	return manifest.ID{Resource: "configmaps", Namespace: ns, Name: name}
}

func op(id string, writes, reads []manifest.ID) Operation {
	return Operation{ID: id, Kind: "restore", Writes: manifest.NewSet(writes...), Reads: manifest.NewSet(reads...)}
}

func admitted(t *testing.T, ch <-chan func()) func() {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("not admitted")
		return nil
	}
}

func notYet(t *testing.T, ch <-chan func()) {
	t.Helper()
	select {
	case <-ch:
		t.Fatal("admitted while it conflicts")
	case <-time.After(20 * time.Millisecond):
	}
}

func admitAsync(l *Local, ctx context.Context, o Operation) <-chan func() {
	ch := make(chan func(), 1)
	go func() {
		if r, err := l.Admit(ctx, o); err == nil {
			ch <- r
		}
	}()
	return ch
}

func TestTwoRestoresIntoOneNamespace(t *testing.T) {
	var l Local
	ctx := context.Background()
	// Two restores into namespace shop that touch different objects run together.
	a, err := l.Admit(ctx, op("a", []manifest.ID{cm("shop", "settings")}, nil))
	require.NoError(t, err)
	b, err := l.Admit(ctx, op("b", []manifest.ID{cm("shop", "flags")}, nil))
	require.NoError(t, err)
	// A third that writes settings waits for a, and says so.
	_, cs, err := l.TryAdmit(ctx, op("c", []manifest.ID{cm("shop", "settings"), cm("shop", "other")}, nil))
	require.NoError(t, err)
	require.Len(t, cs, 1)
	assert.Equal(t, Conflict{ID: "a", Kind: "restore", Running: true, Shared: 1, Examples: []manifest.ID{cm("shop", "settings")}}, cs[0])
	assert.Equal(t, "restore a (running), sharing 1 object(s): configmaps/shop/settings", cs[0].String())
	c := admitAsync(&l, ctx, op("c", []manifest.ID{cm("shop", "settings")}, nil))
	notYet(t, c)
	a()
	admitted(t, c)()
	b()
	b() // a second release does nothing
}

func TestReadersShareWritersDoNot(t *testing.T) {
	var l Local
	ctx := context.Background()
	x := cm("n", "x")
	r1, err := l.Admit(ctx, op("backup-1", nil, []manifest.ID{x}))
	require.NoError(t, err)
	r2, err := l.Admit(ctx, op("backup-2", nil, []manifest.ID{x}))
	require.NoError(t, err, "two readers never conflict")
	w := admitAsync(&l, ctx, op("restore", []manifest.ID{x}, nil))
	notYet(t, w)
	r1()
	notYet(t, w)
	r2()
	admitted(t, w)()
}

func TestFirstComeFirstServed(t *testing.T) {
	var l Local
	ctx := context.Background()
	x, y := cm("n", "x"), cm("n", "y")
	a, err := l.Admit(ctx, op("a", []manifest.ID{x}, nil))
	require.NoError(t, err)
	big := admitAsync(&l, ctx, op("big", []manifest.ID{x, y}, nil))
	notYet(t, big)
	// small conflicts with nothing running, but with big, which came first: it waits.
	small := admitAsync(&l, ctx, op("small", []manifest.ID{y}, nil))
	notYet(t, small)
	// Something that touches neither runs at once.
	other, err := l.Admit(ctx, op("other", []manifest.ID{cm("n", "z")}, nil))
	require.NoError(t, err)
	other()
	a()
	releaseBig := admitted(t, big)
	notYet(t, small)
	releaseBig()
	admitted(t, small)()
}

func TestWithdrawn(t *testing.T) {
	var l Local
	x, y := cm("n", "x"), cm("n", "y")
	a, err := l.Admit(context.Background(), op("a", []manifest.ID{x}, nil))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() { _, err := l.Admit(ctx, op("big", []manifest.ID{x, y}, nil)); errs <- err }()
	time.Sleep(10 * time.Millisecond)
	small := admitAsync(&l, context.Background(), op("small", []manifest.ID{y}, nil))
	notYet(t, small)
	cancel()
	assert.ErrorIs(t, <-errs, context.Canceled)
	admitted(t, small)() // what waited behind the withdrawn one goes on
	a()
	cs, err := l.Conflicts(context.Background(), op("q", []manifest.ID{x, y}, nil))
	require.NoError(t, err)
	assert.Empty(t, cs, "nothing is left behind")
	assert.Empty(t, l.coarse)
}

// Idle: nothing running or waiting. Then Conflicts of any operation is empty.
func TestIdle(t *testing.T) {
	var l Local
	ctx := context.Background()
	idle := func() bool {
		t.Helper()
		ok, err := l.Idle(ctx)
		require.NoError(t, err)
		return ok
	}
	x := cm("n", "x")
	assert.True(t, idle())
	a, err := l.Admit(ctx, op("a", []manifest.ID{x}, nil))
	require.NoError(t, err)
	assert.False(t, idle(), "one running")
	b := admitAsync(&l, ctx, op("b", []manifest.ID{x}, nil))
	notYet(t, b)
	a()
	assert.False(t, idle(), "the waiting one is running now")
	admitted(t, b)()
	assert.True(t, idle(), "both ended")
	_, cs, err := l.TryAdmit(ctx, op("c", nil, nil))
	require.NoError(t, err)
	assert.Empty(t, cs)
}

// TestProperty runs thousands of random operations from many goroutines: at no moment
// do two running operations conflict; every one is admitted; among conflicting ones,
// the earlier arrival is admitted first.
func TestProperty(t *testing.T) {
	const goroutines, perGoroutine, universe = 16, 150, 60
	rng := rand.New(rand.NewPCG(7, 7))
	ops := make([]Operation, goroutines*perGoroutine)
	for i := range ops {
		var w, r []manifest.ID
		for range 1 + rng.IntN(6) {
			id := cm("n", fmt.Sprint(rng.IntN(universe)))
			if rng.IntN(3) == 0 {
				w = append(w, id)
			} else {
				r = append(r, id)
			}
		}
		ops[i] = op(fmt.Sprint(i), w, r)
	}
	byID := map[string]Operation{}
	for _, o := range ops {
		byID[o.ID] = o
	}
	var (
		l        Local
		mu       sync.Mutex
		running  = map[string]Operation{}
		queuedAt = map[string]uint64{}
		order    []string // admissions, in order
		bad      atomic.Int64
	)
	l.OnEvent = func(ev Event) { // under the admitter's lock
		if ev.Type == Queued {
			queuedAt[ev.ID] = ev.Seq
			return
		}
		order = append(order, ev.ID)
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				o := ops[g*perGoroutine+i]
				release, err := l.Admit(context.Background(), o)
				if err != nil {
					bad.Add(1)
					return
				}
				mu.Lock()
				for _, other := range running {
					if conflict(o, other) {
						bad.Add(1)
					}
				}
				running[o.ID] = o
				mu.Unlock()
				time.Sleep(time.Duration(rng2(g, i)) * time.Microsecond)
				mu.Lock()
				delete(running, o.ID)
				mu.Unlock()
				release()
			}
		})
	}
	wg.Wait()
	assert.Zero(t, bad.Load(), "two conflicting operations ran at once")
	require.Len(t, order, len(ops), "every operation was admitted")
	// FIFO: for two queued operations that conflict, the earlier arrival first.
	pos := map[string]int{}
	for i, id := range order {
		pos[id] = i
	}
	fifo := 0
	for a, sa := range queuedAt {
		for b, sb := range queuedAt {
			if sa < sb && conflict(byID[a], byID[b]) {
				fifo++
				assert.Less(t, pos[a], pos[b], "%s came before %s and conflicts with it", a, b)
			}
		}
	}
	assert.Positive(t, fifo, "the test made operations wait behind each other")
}

func rng2(g, i int) int { return (g*31 + i*17) % 200 }

// conflict is the definition, by plain set intersection.
func conflict(a, b Operation) bool {
	return a.Writes.Intersects(b.Writes) || a.Writes.Intersects(b.Reads) || a.Reads.Intersects(b.Writes)
}

// BenchmarkDecision: 100 running operations of 10,000 objects each; how long deciding on
// one more of 10,000 objects takes.
func BenchmarkDecision(b *testing.B) {
	var l Local
	ctx := context.Background()
	ids := func(prefix string, n int) []manifest.ID {
		out := make([]manifest.ID, n)
		for i := range out {
			out[i] = cm(prefix, fmt.Sprint(i))
		}
		return out
	}
	for i := range 100 {
		if _, err := l.Admit(ctx, op(fmt.Sprint(i), ids(fmt.Sprintf("ns-%d", i), 10_000), nil)); err != nil {
			b.Fatal(err)
		}
	}
	incoming := op("incoming", ids("ns-new", 10_000), nil)
	conflicting := op("conflicting", ids("ns-7", 10_000), nil)
	var decided time.Duration
	for b.Loop() {
		start := time.Now()
		release, cs, err := l.TryAdmit(ctx, incoming)
		decided += time.Since(start)
		if err != nil || len(cs) > 0 {
			b.Fatal(err, cs)
		}
		release()
		start = time.Now()
		_, cs, _ = l.TryAdmit(ctx, conflicting)
		decided += time.Since(start)
		if len(cs) != 1 || cs[0].Shared != 10_000 {
			b.Fatal(cs)
		}
	}
	b.ReportMetric(float64(decided.Microseconds())/float64(2*b.N)/1000, "ms/decision")
}
