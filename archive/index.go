package archive

import (
	"iter"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// bodyIndex says where each body is kept. A body's key is its directory (group-resource,
// version, namespace), of which a backup has few, numbered once, and its object's name:
// a slot costs a number, a string and the reference, where the five strings of the key
// would cost twice as much again, a million times over.
type bodyIndex struct {
	dirNums map[bodyDir]int32
	dirs    []bodyDir // by number
	refs    map[dirName]bodyRef
	// last is the directory set last: entries come directory by directory.
	last    bodyDir
	lastNum int32
}

type bodyDir struct {
	gr                 schema.GroupResource
	version, namespace string
}

type dirName struct {
	dir  int32
	name string
}

func newBodyIndex() bodyIndex {
	return bodyIndex{dirNums: map[bodyDir]int32{}, refs: map[dirName]bodyRef{}}
}

func (x *bodyIndex) len() int { return len(x.refs) }

func (x *bodyIndex) get(k bodyKey) (bodyRef, bool) {
	d, ok := x.dirNums[bodyDir{k.gr, k.version, k.namespace}]
	if !ok {
		return bodyRef{}, false
	}
	ref, ok := x.refs[dirName{d, k.name}]
	return ref, ok
}

func (x *bodyIndex) set(k bodyKey, ref bodyRef) {
	dk := bodyDir{k.gr, k.version, k.namespace}
	d, ok := x.lastNum, len(x.dirs) > 0 && dk == x.last
	if !ok {
		d, ok = x.dirNums[dk]
	}
	if !ok {
		d = int32(len(x.dirs))
		x.dirNums[dk] = d
		x.dirs = append(x.dirs, dk)
	}
	x.last, x.lastNum = dk, d
	x.refs[dirName{d, k.name}] = ref
}

// keys iterates the key of every body, in no order.
func (x *bodyIndex) keys() iter.Seq[bodyKey] {
	return func(yield func(bodyKey) bool) {
		for k := range x.refs {
			d := x.dirs[k.dir]
			if !yield(bodyKey{d.gr, d.version, d.namespace, k.name}) {
				return
			}
		}
	}
}
