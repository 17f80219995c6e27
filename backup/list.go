package backup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/pager"

	"github.com/restoregraph/restoregraph/internal/discoverctx"
)

// resource is one listable group-resource with every version the cluster serves.
type resource struct {
	gr         schema.GroupResource
	versions   []string
	preferred  string
	namespaced bool
}

// discover lists every listable resource at every version the cluster serves.
func discover(ctx context.Context, d discovery.DiscoveryInterface) ([]resource, []*metav1.APIResourceList, []*ListError, error) {
	groups, err := discoverctx.ServerGroups(ctx, d)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("backup: discovery: %w", err)
	}
	var out []resource
	var lists []*metav1.APIResourceList
	var incomplete []*ListError
	byGR := map[schema.GroupResource]int{}
	for _, g := range groups.Groups {
		for _, gv := range g.Versions {
			list, err := discoverctx.ServerResourcesForGroupVersion(ctx, d, gv.GroupVersion)
			if err != nil {
				if ctx.Err() != nil {
					return nil, nil, nil, ctx.Err()
				}
				incomplete = append(incomplete, &ListError{Resource: schema.GroupVersionResource{Group: g.Name, Version: gv.Version}, Err: err})
				continue
			}
			lists = append(lists, list)
			for _, r := range list.APIResources {
				if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
					continue
				}
				gr := schema.GroupResource{Group: g.Name, Resource: r.Name}
				i, ok := byGR[gr]
				if !ok {
					i = len(out)
					byGR[gr] = i
					out = append(out, resource{gr: gr, namespaced: r.Namespaced, preferred: gv.Version})
				}
				out[i].versions = append(out[i].versions, gv.Version)
				if gv.Version == g.PreferredVersion.Version {
					out[i].preferred = gv.Version
				}
			}
		}
	}
	return out, lists, incomplete, nil
}

// handlerError is an error of the function a listing hands objects to: it stops the
// backup, where an error of the listing only makes it incomplete.
type handlerError struct{ err error }

func (e handlerError) Error() string { return e.err.Error() }

// list hands each object of a resource in ns to f, a page at a time through client-go's
// pager (which fetches the next pages while f works). A list that fails is recorded as
// incomplete and the backup goes on; an error from f stops it.
//
// A continue token that expires between pages (the server compacted the version the
// list began at, on a long backup) is met as client-go's pager.List meets it: the rest
// is read in one full list, now. What f already had is passed over, so that each object
// comes once. pager.List itself would hold the whole resource in memory on every list,
// not only after an expiry.
func (b *builder) list(ctx context.Context, gvr schema.GroupVersionResource, ns string, f func(*unstructured.Unstructured) error) error {
	client := b.src.Dynamic.Resource(gvr).Namespace(ns)
	pageFn := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		page, err := client.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range page.Items {
			if obj := &page.Items[i]; obj.GetAPIVersion() == "" { // the list's, when a server leaves them out
				obj.SetAPIVersion(page.GetAPIVersion())
				obj.SetKind(strings.TrimSuffix(page.GetKind(), "List"))
			}
		}
		return page, nil
	}
	p := pager.New(pageFn)
	p.PageSize = b.opts.PageSize
	seen := sets.New[string]()
	each := func(obj runtime.Object) error {
		u := obj.(*unstructured.Unstructured)
		key := u.GetNamespace() + "/" + u.GetName()
		if seen.Has(key) {
			return nil
		}
		seen.Insert(key)
		if err := f(u); err != nil {
			return handlerError{err}
		}
		return nil
	}
	err := p.EachListItem(ctx, metav1.ListOptions{}, each)
	if apierrors.IsResourceExpired(err) && seen.Len() > 0 {
		b.res.Expired++
		var all runtime.Object
		if all, err = pageFn(ctx, metav1.ListOptions{}); err == nil {
			err = meta.EachListItem(all, each)
		}
	}
	var he handlerError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &he):
		return he.err
	case ctx.Err() != nil:
		return ctx.Err()
	}
	b.res.Incomplete = append(b.res.Incomplete, &ListError{Resource: gvr, Namespace: ns, Err: err})
	return nil
}
