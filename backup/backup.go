// Package backup writes a Velero-format backup (format 1.1.0) of a live cluster, with
// its manifest: every listable resource the cluster serves, at every version it serves,
// the preferred one marked, as Velero writes it with EnableAPIGroupVersions, selected by
// the same filter a restore uses (package filter).
//
// The manifest is built while listing and written first in the tarball
// (archive.ManifestPath), so that readers take it instead of reading every body. The
// preferred bodies are held in memory until the filter has decided on the manifest; the
// other versions of what it kept wait in a spill file; the tarball is written at the end.
// A resource whose list fails is reported in Result.Incomplete: the backup is then not
// whole, and says so.
package backup

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/manifest"
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
	// Warnings say what was listed but left out: objects no restore can make (the
	// virtual componentstatuses have no UID).
	Warnings []string
}

// resource is one listable group-resource with every version the cluster serves.
type resource struct {
	gr         schema.GroupResource
	versions   []string
	preferred  string
	namespaced bool
}

// Run writes the backup to w. Its error is for what stopped the backup as a whole
// (discovery, an unknown resource name, writing); resources that could not be listed
// are in Result.Incomplete.
func Run(ctx context.Context, src Source, w io.Writer, opts Options) (_ *Result, err error) {
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	resources, lists, incomplete, err := discover(src.Discovery)
	if err != nil {
		return nil, err
	}
	f, err := opts.Filter.Resolve(filter.FromDiscovery(lists))
	if err != nil {
		return nil, err
	}
	spill, err := os.CreateTemp(opts.SpillDir, "restoregraph-backup-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(spill.Name())
	defer spill.Close()
	b := &builder{src: src, opts: opts, f: f, res: &Result{Manifest: manifest.New(0), Incomplete: incomplete},
		bodies: map[objectKey]body{}, spill: bufio.NewWriter(spill)}

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
	if err := b.spill.Flush(); err != nil {
		return b.res, err
	}
	return b.res, b.write(spill, w)
}

// discover lists every listable resource at every version the cluster serves.
func discover(d discovery.DiscoveryInterface) ([]resource, []*metav1.APIResourceList, []*ListError, error) {
	groups, err := d.ServerGroups()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("backup: discovery: %w", err)
	}
	var out []resource
	var lists []*metav1.APIResourceList
	var incomplete []*ListError
	byGR := map[schema.GroupResource]int{}
	for _, g := range groups.Groups {
		for _, gv := range g.Versions {
			list, err := d.ServerResourcesForGroupVersion(gv.GroupVersion)
			if err != nil {
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

// body is an object's JSON and the entry it goes in.
type body struct {
	entry archive.Entry
	data  []byte
}

// objectKey names an object across its versions.
type objectKey struct {
	gr              schema.GroupResource
	namespace, name string
}

type builder struct {
	src    Source
	opts   Options
	f      *filter.Filter
	res    *Result
	bodies map[objectKey]body // preferred bodies, until the filter has decided
	spill  *bufio.Writer
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

// store holds obj's body for the tarball.
func (b *builder) store(gr schema.GroupResource, obj *unstructured.Unstructured) error {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	b.bodies[objectKey{gr, obj.GetNamespace(), obj.GetName()}] = body{entryOf(obj, gr.Resource), data}
	return nil
}

// reread reads the preferred bodies of what was kept again, once admitted: an object
// gone since is left out of the tarball (the manifest still names it, and a reader warns
// of it); one made since is not in this backup.
func (b *builder) reread(ctx context.Context, resources []resource) error {
	b.bodies = map[objectKey]body{}
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
			return b.record(entryOf(obj, r.gr.Resource), data)
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

// list pages through a list, handing each object to f. A list that fails is recorded
// as incomplete and the backup goes on; an error from f stops it.
func (b *builder) list(ctx context.Context, gvr schema.GroupVersionResource, ns string, f func(*unstructured.Unstructured) error) error {
	client := b.src.Dynamic.Resource(gvr).Namespace(ns)
	cont := ""
	for {
		page, err := client.List(ctx, metav1.ListOptions{Limit: b.opts.PageSize, Continue: cont})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			b.res.Incomplete = append(b.res.Incomplete, &ListError{Resource: gvr, Namespace: ns, Err: err})
			return nil
		}
		for i := range page.Items {
			obj := &page.Items[i]
			if obj.GetAPIVersion() == "" { // the list's, when a server leaves them out
				obj.SetAPIVersion(page.GetAPIVersion())
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

func entryOf(obj *unstructured.Unstructured, resource string) archive.Entry {
	return archive.Entry{APIVersion: obj.GetAPIVersion(), Resource: resource, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// record spills a body at a version other than the preferred one: its entry and length
// as a line of JSON, then the body.
func (b *builder) record(e archive.Entry, data []byte) error {
	head, err := json.Marshal(spillHead{e, len(data)})
	if err != nil {
		return err
	}
	b.spill.Write(append(head, '\n'))
	_, err = b.spill.Write(data)
	return err
}

type spillHead struct {
	Entry archive.Entry
	Len   int
}

// write writes the tarball: the version, the manifest, the preferred bodies of what was
// kept (the CRDs' first), then the other versions from the spill file.
func (b *builder) write(spill *os.File, w io.Writer) error {
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
	for _, it := range items {
		for _, c := range slices.Concat([]*manifest.Item{it}, b.res.Manifest.Aliases(it.UID)) {
			bd, ok := b.bodies[objectKey{c.GroupResource(), c.Namespace, c.Name}]
			if !ok {
				continue
			}
			if err := aw.AddJSON(bd.entry, bd.data, true); err != nil {
				return err
			}
			b.res.Copies++
			if c == it {
				b.res.Objects++
			}
		}
	}
	if _, err := spill.Seek(0, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReader(spill)
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) && len(line) == 0 {
			break
		}
		if err != nil {
			return err
		}
		var head spillHead
		if err := json.Unmarshal(line, &head); err != nil {
			return fmt.Errorf("backup: spill file: %w", err)
		}
		data := make([]byte, head.Len)
		if _, err := io.ReadFull(r, data); err != nil {
			return err
		}
		if err := aw.AddJSON(head.Entry, data, false); err != nil {
			return err
		}
		b.res.Copies++
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
