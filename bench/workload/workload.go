// Package workload generates backups for tests, benchmarks and the demo: a fleet of
// Cluster API workload clusters as a management cluster holds them, and generic
// applications with owner chains. Everything is deterministic for a given seed.
package workload

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/restoregraph/restoregraph/archive"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Object is one object of a backup: its body, its resource, and whether it is at the
// source's preferred version of its group-resource.
type Object struct {
	*unstructured.Unstructured
	Resource  string
	Preferred bool
}

// Backup is a generated backup.
type Backup struct {
	Objects []Object
	rng     *rand.Rand
}

func newBackup(seed uint64) *Backup { return &Backup{rng: rand.New(rand.NewPCG(seed, 42))} }

// UID returns a random-looking, reproducible UID.
func (b *Backup) uid() types.UID {
	return types.UID(fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", b.rng.Uint32(), b.rng.Uint32()&0xffff,
		b.rng.Uint32()&0xfff, b.rng.Uint32()&0xfff, b.rng.Uint64()&0xffffffffffff))
}

// add appends an object and returns it, for owner references.
func (b *Backup) add(apiVersion, kind, resource, ns, name string, labels map[string]string, fields map[string]any, owners ...*unstructured.Unstructured) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetUID(b.uid())
	u.SetResourceVersion(fmt.Sprint(1000 + len(b.Objects)))
	u.SetCreationTimestamp(metav1.Unix(1700000000, 0))
	if len(labels) > 0 {
		u.SetLabels(labels)
	}
	for i, o := range owners {
		u.SetOwnerReferences(append(u.GetOwnerReferences(), metav1.OwnerReference{
			APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName(), UID: o.GetUID(),
			Controller: ptr(i == 0), BlockOwnerDeletion: ptr(true),
		}))
	}
	b.Objects = append(b.Objects, Object{Unstructured: u, Resource: resource, Preferred: true})
	return u
}

func ptr[T any](v T) *T { return &v }

// Write writes the backup as a Velero tarball in format 1.1.0.
func (b *Backup) Write(w io.Writer) error {
	aw, err := archive.NewWriter(w, archive.Format11)
	if err != nil {
		return err
	}
	for _, o := range b.Objects {
		if err := aw.Add(o.Unstructured, o.Resource, o.Preferred); err != nil {
			return err
		}
	}
	return aw.Close()
}

// crd returns a CustomResourceDefinition serving versions, the first the storage one.
func (b *Backup) crd(group, kind, plural string, namespaced bool, versions ...string) {
	var vs []any
	for i, v := range versions {
		vs = append(vs, map[string]any{
			"name": v, "served": true, "storage": i == 0,
			"schema":       map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			"subresources": map[string]any{"status": map[string]any{}},
		})
	}
	scope := "Cluster"
	if namespaced {
		scope = "Namespaced"
	}
	b.add("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", "", plural+"."+group,
		map[string]string{"cluster.x-k8s.io/provider": strings.Split(group, ".")[0]},
		map[string]any{"spec": map[string]any{
			"group": group, "scope": scope, "versions": vs,
			"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
		}})
}
