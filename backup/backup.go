// Package backup writes a Velero-format backup (format 1.1.0) of a live cluster: every
// listable resource the cluster serves, at every version it serves, the preferred one
// marked, as Velero writes it with EnableAPIGroupVersions.
//
// Not built yet: the manifest written beside the bodies, and the filters a restore
// shares (label selector, resources in or out).
package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/restoregraph/restoregraph/archive"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// Source is the cluster a backup reads.
type Source struct {
	Dynamic   dynamic.Interface
	Discovery discovery.DiscoveryInterface
}

// Options tune Run. The zero value backs up every namespace and no cluster-scoped
// resource but the Namespaces themselves.
type Options struct {
	// Namespaces limits the backup to these namespaces (and their Namespace objects).
	Namespaces []string
	// ClusterResources adds every cluster-scoped object.
	ClusterResources bool
	// PageSize is the list page size; default 500.
	PageSize int64
}

// ListError says which resource could not be listed: the backup is incomplete.
type ListError struct {
	Resource  schema.GroupVersionResource
	Namespace string
	Err       error
}

func (e *ListError) Error() string {
	where := e.Resource.String()
	if e.Namespace != "" {
		where += " in " + e.Namespace
	}
	return fmt.Sprintf("backup: list %s: %v", where, e.Err)
}

func (e *ListError) Unwrap() error { return e.Err }

// Result says what a backup wrote.
type Result struct {
	// Objects counts the objects at their preferred version; Copies every body written.
	Objects, Copies int
	// Incomplete lists what could not be listed. A backup with any is not whole.
	Incomplete []*ListError
}

// Run writes the backup to w. Its error is for what stopped the backup as a whole
// (discovery, writing); resources that could not be listed are in Result.Incomplete.
func Run(ctx context.Context, src Source, w io.Writer, opts Options) (*Result, error) {
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	groups, err := src.Discovery.ServerGroups()
	if err != nil {
		return nil, fmt.Errorf("backup: discovery: %w", err)
	}
	aw, err := archive.NewWriter(w, archive.Format11)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	for _, g := range groups.Groups {
		for _, gv := range g.Versions {
			list, err := src.Discovery.ServerResourcesForGroupVersion(gv.GroupVersion)
			if err != nil {
				res.Incomplete = append(res.Incomplete, &ListError{Resource: schema.GroupVersionResource{Group: g.Name, Version: gv.Version}, Err: err})
				continue
			}
			preferred := gv.Version == g.PreferredVersion.Version
			for _, r := range list.APIResources {
				if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
					continue
				}
				gvr := schema.GroupVersionResource{Group: g.Name, Version: gv.Version, Resource: r.Name}
				if err := backupResource(ctx, src, aw, gvr, r.Namespaced, preferred, opts, res); err != nil {
					return res, err
				}
			}
		}
	}
	return res, aw.Close()
}

// backupResource writes every object of gvr that opts select.
func backupResource(ctx context.Context, src Source, aw *archive.Writer, gvr schema.GroupVersionResource, namespaced, preferred bool, opts Options, res *Result) error {
	namespaces := []string{""}
	switch {
	case namespaced && len(opts.Namespaces) > 0:
		namespaces = opts.Namespaces
	case !namespaced && !opts.ClusterResources && !(gvr.Group == "" && gvr.Resource == "namespaces"):
		return nil
	}
	for _, ns := range namespaces {
		err := list(ctx, src.Dynamic.Resource(gvr).Namespace(ns), opts.PageSize, func(obj *unstructured.Unstructured) error {
			if gvr.Group == "" && gvr.Resource == "namespaces" && len(opts.Namespaces) > 0 && !slices.Contains(opts.Namespaces, obj.GetName()) {
				return nil
			}
			if err := aw.Add(obj, gvr.Resource, preferred); err != nil {
				return err
			}
			res.Copies++
			if preferred {
				res.Objects++
			}
			return nil
		})
		var le *ListError
		if errors.As(err, &le) {
			le.Resource, le.Namespace = gvr, ns
			res.Incomplete = append(res.Incomplete, le)
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// list pages through a list, handing each object to f. A failed list is a *ListError;
// an error from f is returned as it is.
func list(ctx context.Context, client dynamic.ResourceInterface, pageSize int64, f func(*unstructured.Unstructured) error) error {
	cont := ""
	for {
		page, err := client.List(ctx, metav1.ListOptions{Limit: pageSize, Continue: cont})
		if err != nil {
			return &ListError{Err: err}
		}
		for i := range page.Items {
			obj := &page.Items[i]
			// A list's items carry no apiVersion and kind of their own in some servers'
			// answers: the list's are theirs.
			if obj.GetAPIVersion() == "" {
				obj.SetAPIVersion(page.GetAPIVersion())
			}
			if obj.GetKind() == "" {
				obj.SetKind(strings.TrimSuffix(page.GetKind(), "List"))
			}
			if err := f(obj); err != nil {
				return err
			}
		}
		if cont = page.GetContinue(); cont == "" {
			return nil
		}
	}
}
