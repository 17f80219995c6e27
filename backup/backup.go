// Package backup writes a Velero-format backup (format 1.1.0) of a live cluster, with
// its manifest: every listable resource the cluster serves, at every version it serves,
// the preferred one marked, as Velero writes it with EnableAPIGroupVersions, selected by
// the same filter a restore uses (package filter).
//
// The manifest is built while listing and written first in the tarball
// (archive.ManifestPath), so that readers take it instead of reading every body. Bodies
// wait in spill files until the filter has decided on the manifest, and memory holds
// only where each is: it grows with the number of objects, not with their size. The
// tarball is written at the end. Lists go through client-go's pager; a continue token
// that expires mid-list is met with one full list of the rest. A resource whose list
// fails is reported in Result.Incomplete: the backup is then not whole, and says so.
package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/manifest"
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

// Options tune Run. The zero value backs up everything.
type Options struct {
	// Filter selects what is backed up, as a restore's does.
	Filter filter.Spec
	// PageSize is the list page size; default 500.
	PageSize int64
	// SpillDir holds the bodies while the manifest is built; default os.TempDir().
	SpillDir string
	// Admitter, when set, admits the backup as an operation that reads what it backs
	// up: the first listing says what that is, and the bodies are read again once
	// admitted, so that no restore writes them meanwhile. Name is its ID there.
	Admitter admission.Admitter
	Name     string
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
	// Manifest is the backup's manifest, as written in the tarball.
	Manifest *manifest.Manifest
	// Objects counts the objects backed up; Copies every body written (one per version).
	Objects, Copies int
	// Excluded counts the objects listed that the filter left out.
	Excluded int
	// Incomplete lists what could not be listed. A backup with any is not whole.
	Incomplete []*ListError
	// Expired counts the lists whose continue token expired between pages, the rest
	// then read in one full list.
	Expired int
	// Warnings say what was listed but left out: objects no restore can make (the
	// virtual componentstatuses have no UID).
	Warnings []string
}

// Run writes the backup to w. Its error is for what stopped the backup as a whole
// (discovery, an unknown resource name, writing); resources that could not be listed
// are in Result.Incomplete.
func Run(ctx context.Context, src Source, w io.Writer, opts Options) (_ *Result, err error) {
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	resources, lists, incomplete, err := discover(ctx, src.Discovery)
	if err != nil {
		return nil, err
	}
	f, err := opts.Filter.Resolve(filter.FromDiscovery(lists))
	if err != nil {
		return nil, err
	}
	b := &builder{src: src, opts: opts, f: f, res: &Result{Manifest: manifest.New(0), Incomplete: incomplete},
		at: map[objectKey]int64{}}
	if b.preferred, err = newSpill(opts.SpillDir); err != nil {
		return nil, err
	}
	defer b.preferred.close()
	if b.others, err = newSpill(opts.SpillDir); err != nil {
		return nil, err
	}
	defer b.others.close()

	// Every object at its preferred version first: the manifest, then the filter on it.
	for _, r := range resources {
		if !b.mayTake(r) {
			continue
		}
		if err := b.listPreferred(ctx, r); err != nil {
			return b.res, err
		}
	}
	excluded := f.Apply(b.res.Manifest)
	kept := manifest.New(b.res.Manifest.Len() - len(excluded))
	for _, it := range b.res.Manifest.Items() {
		if _, out := excluded[it]; !out {
			kept.Add(it)
			for _, c := range b.res.Manifest.Aliases(it.UID) {
				kept.Add(c)
			}
		}
	}
	b.res.Excluded, b.res.Manifest = len(excluded), kept
	if opts.Admitter != nil {
		// An admission lost while the backup reads (a restore may now write what it
		// reads) ends it, with the reason as the context's cause.
		var lost context.CancelCauseFunc
		ctx, lost = context.WithCancelCause(ctx)
		defer lost(nil)
		release, err := opts.Admitter.Admit(ctx, admission.Operation{ID: opts.Name, Kind: "backup", Reads: kept.Set(), Lost: lost})
		if err != nil {
			return b.res, fmt.Errorf("backup: admission: %w", err)
		}
		defer release()
		defer func() {
			if cause := context.Cause(ctx); errors.Is(cause, admission.ErrLost) && err == nil {
				err = fmt.Errorf("backup: %w", cause)
			}
		}()
		if err := b.reread(ctx, resources); err != nil {
			return b.res, err
		}
	}
	// Then the other versions of what was kept.
	held := map[schema.GroupResource]bool{}
	for _, r := range b.res.Manifest.Resources() {
		held[r.GroupResource] = true
	}
	for _, r := range resources {
		if !held[r.gr] {
			continue
		}
		b.res.Manifest.SetVersions(r.gr, r.versions, r.preferred)
		for _, v := range r.versions {
			if v != r.preferred {
				if err := b.listOther(ctx, r, v); err != nil {
					return b.res, err
				}
			}
		}
	}
	return b.res, b.write(w)
}

// objectKey names an object across its versions.
type objectKey struct {
	gr              schema.GroupResource
	namespace, name string
}

type builder struct {
	src  Source
	opts Options
	f    *filter.Filter
	res  *Result
	// preferred holds the bodies at the preferred version, at the offsets at says;
	// others the other versions of what the filter kept, in the order they go in the
	// tarball.
	preferred, others *spill
	at                map[objectKey]int64
}

// mayTake reports whether the filter can take anything of r, so that what it cannot is
// not listed at all: resources it leaves out, and cluster-scoped ones when those are
// off. Namespaces and CRDs are listed whatever the resource filters say, for the
// filter takes those that what it takes needs.
func (b *builder) mayTake(r resource) bool {
	if r.gr == (schema.GroupResource{Resource: "namespaces"}) || r.gr == manifest.CRDGroupResource {
		return true
	}
	if !b.f.Resource(r.gr) {
		return false
	}
	if cluster := b.f.ClusterResources(); !r.namespaced && (cluster != nil && !*cluster || cluster == nil && !b.f.AllNamespaces()) {
		return false
	}
	return true
}

// namespaces returns where to list a resource: each included namespace when the
// filter names them, else everywhere.
func (b *builder) namespaces(r resource) []string {
	if r.namespaced && len(b.opts.Filter.IncludeNamespaces) > 0 && !slices.Contains(b.opts.Filter.IncludeNamespaces, "*") {
		return b.opts.Filter.IncludeNamespaces
	}
	return []string{""}
}

func (b *builder) listPreferred(ctx context.Context, r resource) error {
	gvr := r.gr.WithVersion(r.preferred)
	for _, ns := range b.namespaces(r) {
		err := b.list(ctx, gvr, ns, func(obj *unstructured.Unstructured) error {
			if obj.GetUID() == "" {
				b.res.Warnings = append(b.res.Warnings, fmt.Sprintf("%s %s has no uid: it is no object a restore can make; left out", r.gr, obj.GetName()))
				return nil
			}
			if _, err := b.res.Manifest.Add(manifest.FromObject(obj, r.gr.Resource)); err != nil {
				return fmt.Errorf("backup: %s %s/%s: %w", gvr, obj.GetNamespace(), obj.GetName(), err)
			}
			return b.store(r.gr, obj)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// store spills obj's body at its preferred version, for the tarball.
func (b *builder) store(gr schema.GroupResource, obj *unstructured.Unstructured) error {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	off, err := b.preferred.put(entryOf(obj, gr.Resource), data)
	if err != nil {
		return err
	}
	b.at[objectKey{gr, obj.GetNamespace(), obj.GetName()}] = off
	return nil
}

// reread reads the preferred bodies of what was kept again, once admitted: an object
// gone since is left out of the tarball (the manifest still names it, and a reader warns
// of it); one made since is not in this backup.
func (b *builder) reread(ctx context.Context, resources []resource) error {
	clear(b.at)
	for _, r := range resources {
		if !b.mayTake(r) {
			continue
		}
		for _, ns := range b.namespaces(r) {
			err := b.list(ctx, r.gr.WithVersion(r.preferred), ns, func(obj *unstructured.Unstructured) error {
				if !b.kept(r.gr, obj.GetNamespace(), obj.GetName()) {
					return nil
				}
				return b.store(r.gr, obj)
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *builder) listOther(ctx context.Context, r resource, version string) error {
	for _, ns := range b.namespaces(r) {
		err := b.list(ctx, r.gr.WithVersion(version), ns, func(obj *unstructured.Unstructured) error {
			if !b.kept(r.gr, obj.GetNamespace(), obj.GetName()) {
				return nil
			}
			data, err := json.Marshal(obj.Object)
			if err != nil {
				return err
			}
			_, err = b.others.put(entryOf(obj, r.gr.Resource), data)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// kept reports whether the filter kept the object.
func (b *builder) kept(gr schema.GroupResource, namespace, name string) bool {
	_, ok := b.res.Manifest.Get(manifest.ID{Group: gr.Group, Resource: gr.Resource, Namespace: namespace, Name: name})
	return ok
}

func entryOf(obj *unstructured.Unstructured, resource string) archive.Entry {
	return archive.Entry{APIVersion: obj.GetAPIVersion(), Resource: resource, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// write writes the tarball: the version, the manifest, the preferred bodies of what was
// kept (the CRDs' first), then the other versions.
func (b *builder) write(w io.Writer) error {
	if err := errors.Join(b.preferred.done(), b.others.done()); err != nil {
		return err
	}
	aw, err := archive.NewWriter(w, archive.Format11)
	if err != nil {
		return err
	}
	if err := aw.AddManifest(b.res.Manifest); err != nil {
		return err
	}
	// CRDs first: a reader that plans from the manifest reads their bodies, and no
	// other, and reads the tarball in order.
	isCRD := func(it *manifest.Item) bool { return it.GroupResource() == manifest.CRDGroupResource }
	all := b.res.Manifest.Items()
	items := slices.Concat(filterItems(all, isCRD), filterItems(all, func(it *manifest.Item) bool { return !isCRD(it) }))
	var buf []byte
	for _, it := range items {
		for _, c := range slices.Concat([]*manifest.Item{it}, b.res.Manifest.Aliases(it.UID)) {
			off, ok := b.at[objectKey{c.GroupResource(), c.Namespace, c.Name}]
			if !ok {
				continue
			}
			e, data, _, err := b.preferred.at(off, &buf)
			if err != nil {
				return err
			}
			if err := aw.AddJSON(e, data, true); err != nil {
				return err
			}
			b.res.Copies++
			if c == it {
				b.res.Objects++
			}
		}
	}
	err = b.others.each(func(e archive.Entry, data []byte) error {
		b.res.Copies++
		return aw.AddJSON(e, data, false)
	})
	if err != nil {
		return err
	}
	return aw.Close()
}

func filterItems(items []*manifest.Item, keep func(*manifest.Item) bool) []*manifest.Item {
	var out []*manifest.Item
	for _, it := range items {
		if keep(it) {
			out = append(out, it)
		}
	}
	return out
}
