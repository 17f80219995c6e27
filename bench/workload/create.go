package workload

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Create creates o as it was backed up, less its uid and resourceVersion, and less its
// ownerReferences when dropOwners is set.
func Create(ctx context.Context, dyn dynamic.Interface, o Object, dropOwners bool) error {
	gv, u, err := asCreated(o, dropOwners)
	if err != nil {
		return err
	}
	_, err = dyn.Resource(gv.WithResource(o.Resource)).Namespace(o.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
	return err
}

// asCreated returns o's group-version, and a copy of o as Create sends it.
func asCreated(o Object, dropOwners bool) (schema.GroupVersion, *unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(o.GetAPIVersion())
	if err != nil {
		return gv, nil, err
	}
	u := o.DeepCopy()
	unstructured.RemoveNestedField(u.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(u.Object, "metadata", "uid")
	if dropOwners {
		u.SetOwnerReferences(nil)
	}
	return gv, u, nil
}

// CreateUnordered creates objects with workers goroutines in no order at all: the
// ceiling that an ordered restore is measured against. Owner references are dropped,
// for the owners may not exist yet. Each object is encoded and sent through a REST
// client made from cfg, and the server's answer is not decoded unless it is an error:
// no client does less for a create. It returns the first error.
func CreateUnordered(ctx context.Context, cfg *rest.Config, objects []Object, workers int) error {
	return postAll(ctx, cfg, len(objects), workers, func(i int) (Request, error) { return NewRequest(objects[i], true) })
}

// Request is a create as CreateUnordered sends it: where, and the encoded object.
type Request struct {
	kind, namespace, name string // for errors
	path                  []string
	body                  []byte
}

// NewRequest encodes o as Create sends it: less its uid and resourceVersion, and less
// its ownerReferences when dropOwners is set (CreateUnordered's requests). A ceiling
// over a million objects keeps these, not the decoded objects, which would take
// several times the memory.
func NewRequest(o Object, dropOwners bool) (Request, error) {
	gv, u, err := asCreated(o, dropOwners)
	if err != nil {
		return Request{}, err
	}
	body, err := u.MarshalJSON()
	if err != nil {
		return Request{}, err
	}
	path := []string{"/apis", gv.Group, gv.Version}
	if gv.Group == "" {
		path = []string{"/api", gv.Version}
	}
	if ns := o.GetNamespace(); ns != "" {
		path = append(path, "namespaces", ns)
	}
	path = append(path, o.Resource)
	return Request{kind: o.GetKind(), namespace: o.GetNamespace(), name: o.GetName(), path: path, body: body}, nil
}

// PostUnordered sends requests as CreateUnordered does, already encoded: the ceiling
// without the client's encoding.
func PostUnordered(ctx context.Context, cfg *rest.Config, requests []Request, workers int) error {
	return postAll(ctx, cfg, len(requests), workers, func(i int) (Request, error) { return requests[i], nil })
}

// postAll sends the n requests request(i) makes, with workers goroutines, through one
// REST client made from cfg. It returns the first error.
func postAll(ctx context.Context, cfg *rest.Config, n, workers int, request func(i int) (Request, error)) error {
	rc, err := rest.UnversionedRESTClientFor(dynamic.ConfigFor(cfg))
	if err != nil {
		return err
	}
	var g errgroup.Group
	g.SetLimit(workers)
	for i := range n {
		g.Go(func() error {
			r, err := request(i)
			if err != nil {
				return err
			}
			if err := rc.Post().AbsPath(r.path...).Body(r.body).Do(ctx).Error(); err != nil {
				return fmt.Errorf("%s %s/%s: %w", r.kind, r.namespace, r.name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// CreatedFirst reports whether objects of kind are created before a ceiling's clock
// starts: namespaces and CRDs, which the rest need.
func CreatedFirst(kind string) bool {
	return kind == "Namespace" || kind == "CustomResourceDefinition"
}

// Split returns the objects at their preferred version, namespaces and CRDs apart from
// the rest.
func (b *Backup) Split() (namespacesAndCRDs, rest []Object) {
	for _, o := range b.Objects {
		if !o.Preferred {
			continue
		}
		if CreatedFirst(o.GetKind()) {
			namespacesAndCRDs = append(namespacesAndCRDs, o)
		} else {
			rest = append(rest, o)
		}
	}
	return namespacesAndCRDs, rest
}
