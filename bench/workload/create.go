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
	rc, err := rest.UnversionedRESTClientFor(dynamic.ConfigFor(cfg))
	if err != nil {
		return err
	}
	var g errgroup.Group
	g.SetLimit(workers)
	for _, o := range objects {
		g.Go(func() error {
			if err := post(ctx, rc, o); err != nil {
				return fmt.Errorf("%s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
			return nil
		})
	}
	return g.Wait()
}

// post creates o through rc, as CreateUnordered does.
func post(ctx context.Context, rc rest.Interface, o Object) error {
	gv, u, err := asCreated(o, true)
	if err != nil {
		return err
	}
	body, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	path := []string{"/apis", gv.Group, gv.Version}
	if gv.Group == "" {
		path = []string{"/api", gv.Version}
	}
	if ns := o.GetNamespace(); ns != "" {
		path = append(path, "namespaces", ns)
	}
	path = append(path, o.Resource)
	return rc.Post().AbsPath(path...).Body(body).Do(ctx).Error()
}

// Split returns the objects at their preferred version, namespaces and CRDs apart from
// the rest.
func (b *Backup) Split() (namespacesAndCRDs, rest []Object) {
	for _, o := range b.Objects {
		if !o.Preferred {
			continue
		}
		if k := o.GetKind(); k == "Namespace" || k == "CustomResourceDefinition" {
			namespacesAndCRDs = append(namespacesAndCRDs, o)
		} else {
			rest = append(rest, o)
		}
	}
	return namespacesAndCRDs, rest
}
