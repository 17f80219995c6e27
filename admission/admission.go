package admission

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/restoregraph/restoregraph/manifest"
)

// Operation is something that touches objects: what it writes and what it reads, as
// version-free identities (a restore writes its objects as they will be named in the
// target; a backup reads its objects).
type Operation struct {
	ID     string
	Kind   string // "restore", "backup", or the caller's
	Writes manifest.Set
	Reads  manifest.Set
	// OnWait, when set, is told once what the operation waits for, when Admit finds
	// that it must wait, before it waits.
	OnWait func([]Conflict)
	// Lost, when set, is called from another goroutine when an admitted operation
	// loses its admission before it is released, with an error that wraps ErrLost: its
	// Lease could not be renewed in time, or was removed or taken by another process.
	// Others may then be admitted to what it touches: the holder must stop writing.
	// Local never loses an admission.
	Lost func(error)
	// Resumes says the operation carries on one of the same ID and Kind that ended
	// without giving its admission back (a process killed, whose journal this one
	// follows): a live record of that ID is its predecessor's, removed rather than waited
	// for until it expires. Two operations of one ID must not then run at once.
	Resumes bool
}

// ErrLost is wrapped by the error Operation.Lost is given.
var ErrLost = errors.New("admission lost")

// Conflict is an earlier operation that an operation must wait for.
type Conflict struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Running: admitted and not yet released; otherwise waiting ahead.
	Running bool `json:"running"`
	// Shared counts the identities the two touch in conflicting ways; Examples names a
	// few of them.
	Shared   int           `json:"shared"`
	Examples []manifest.ID `json:"examples"`
}

func (c Conflict) String() string {
	state := "waiting"
	if c.Running {
		state = "running"
	}
	ex := make([]string, len(c.Examples))
	for i, id := range c.Examples {
		ex[i] = id.String()
	}
	return fmt.Sprintf("%s %s (%s), sharing %d object(s): %s", c.Kind, c.ID, state, c.Shared, strings.Join(ex, ", "))
}

// Admitter admits operations. Local and Cluster implement it.
type Admitter interface {
	// Admit blocks until op may run and returns the function that ends it. ctx's end
	// withdraws a waiting op.
	Admit(ctx context.Context, op Operation) (release func(), err error)
	// TryAdmit admits op at once when nothing earlier conflicts with it; otherwise it
	// returns the conflicts and admits nothing.
	TryAdmit(ctx context.Context, op Operation) (release func(), conflicts []Conflict, err error)
	// Conflicts returns what op would wait for now, admitting nothing.
	Conflicts(ctx context.Context, op Operation) ([]Conflict, error)
}

// Idler is an Admitter that tells, cheaply, that no operation is live: Conflicts of any
// operation is then empty. A caller asks it before making the operation it would ask
// Conflicts about, which for a million objects is a set of a million identities.
type Idler interface {
	Idle(ctx context.Context) (bool, error)
}

// maxExamples bounds the identities a Conflict names.
const maxExamples = 3

// key is an identity's hash, the same in every process, and whether it is written.
type key struct {
	hash  uint64
	write bool
}

// footprint is an operation's identities: their hashes in ascending order, each once,
// written ones marked (an identity both read and written is written), with the sets
// they come from, which name the identity behind a hash for the examples of a Conflict
// (empty for another process's operation, whose hashes alone are known). A copy of each
// identity beside its hash was 72 MB for a million, and four pointers each for the
// collector to follow while the operation ran.
type footprint struct {
	keys          []key
	writes, reads manifest.Set
}

// id returns the identity behind keys[i]: the written one where a written and a read
// one share its hash, as the keys mark it; the zero ID when the sets are not known.
func (f footprint) id(i int) manifest.ID {
	h := f.keys[i].hash
	if id, ok := f.writes.ByHash(h); ok {
		return id
	}
	id, _ := f.reads.ByHash(h)
	return id
}

// places iterates where f's identities live, and whether f writes each (once for each
// identity, not each place).
func (f footprint) places() iter.Seq2[coarseKey, bool] {
	return func(yield func(coarseKey, bool) bool) {
		for _, s := range []struct {
			set   manifest.Set
			write bool
		}{{f.writes, true}, {f.reads, false}} {
			for id := range s.set.All() {
				if !yield(coarseKey{id.Namespace, id.Group, id.Resource}, s.write) {
					return
				}
			}
		}
	}
}

// coarseKey is where an identity lives: its namespace and group-resource.
type coarseKey struct {
	namespace, group, resource string
}

// coarseKeys returns the distinct places of a footprint's identities.
func coarseKeys(f footprint) []coarseKey {
	seen := map[coarseKey]bool{}
	var out []coarseKey
	for c := range f.places() {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// footprintOfOp is op's footprint: its sets' hashes (ID.Hash, the same in every
// process), which they hold sorted, merged.
func footprintOfOp(op Operation) footprint {
	f := footprint{keys: make([]key, 0, op.Writes.Len()+op.Reads.Len()), writes: op.Writes, reads: op.Reads}
	add := func(h uint64, write bool) {
		if last := len(f.keys) - 1; last >= 0 && f.keys[last].hash == h {
			f.keys[last].write = f.keys[last].write || write
			return
		}
		f.keys = append(f.keys, key{h, write})
	}
	nextRead, stop := iter.Pull2(op.Reads.Hashed()) // the fewer, mostly: adopted Namespaces
	defer stop()
	rh, _, more := nextRead()
	for wh := range op.Writes.Hashed() {
		for more && rh < wh {
			add(rh, false)
			rh, _, more = nextRead()
		}
		add(wh, true)
	}
	for more {
		add(rh, false)
		rh, _, more = nextRead()
	}
	return f
}

// conflicting reports whether two uses of one identity conflict: unless both read.
func conflicting(a, b bool) bool { return a || b }

// sortConflicts orders conflicts running first, then by ID, so reports read the same
// every time.
func sortConflicts(cs []Conflict) {
	slices.SortFunc(cs, func(a, b Conflict) int {
		if a.Running != b.Running {
			if a.Running {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
}
