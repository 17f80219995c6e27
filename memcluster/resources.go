package memcluster

import (
	"slices"
	"strings"

	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/memcluster/discovery"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// resourceType is one served resource.
type resourceType struct {
	gr         schema.GroupResource
	kind       string
	singular   string
	shortNames []string
	namespaced bool
	versions   []string // served, highest priority first
	verbs      metav1.Verbs
	status     bool   // has a status subresource
	generation bool   // sets metadata.generation, as kinds with a spec do
	crd        string // the CRD that serves it; "" for built-ins
	codec      codec  // compresses its objects' JSON
	// What a created object's apiVersion (at versions' index) and kind are set to,
	// boxed once when the type is added (boxed): boxing them, and writing the
	// apiVersion, for each create was 36 MB of a million's.
	apiVersions []any
	kindValue   any
}

// boxed readies apiVersions and kindValue.
func (rt *resourceType) boxed() {
	rt.apiVersions = make([]any, len(rt.versions))
	for i, v := range rt.versions {
		rt.apiVersions[i] = schema.GroupVersion{Group: rt.gr.Group, Version: v}.String()
	}
	rt.kindValue = rt.kind
}

// identity returns an object's apiVersion at version and its kind, as any.
func (rt *resourceType) identity(version string) (apiVersion, kind any) {
	if i := slices.Index(rt.versions, version); i >= 0 && len(rt.apiVersions) == len(rt.versions) {
		return rt.apiVersions[i], rt.kindValue
	}
	return schema.GroupVersion{Group: rt.gr.Group, Version: version}.String(), rt.kind
}

func (rt *resourceType) serves(v string) bool { return slices.Contains(rt.versions, v) }

var allVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// builtins are the resources a memcluster serves from the start: those the recorded
// kube-apiserver serves, each at every version it serves, with its kind, scope, verbs
// and short names.
func builtins() []*resourceType {
	byGR := map[schema.GroupResource]*resourceType{}
	var out []*resourceType
	for _, r := range discovery.KubeAPIServer().Resources {
		gr := schema.GroupResource{Group: r.Group, Resource: r.Resource}
		rt := byGR[gr]
		if rt == nil {
			// As on a real server, only kinds whose spec is reconciled carry a generation.
			generation := r.Group == "apps" || r.Group == "batch" || r.Group == "apiextensions.k8s.io"
			rt = &resourceType{gr: gr, kind: r.Kind, singular: r.Singular, namespaced: r.Namespaced, generation: generation}
			byGR[gr] = rt
			out = append(out, rt)
		}
		rt.versions = manifest.SortVersions(append(rt.versions, r.Version))
		if r.Preferred || rt.verbs == nil {
			rt.verbs, rt.shortNames = metav1.Verbs(r.Verbs), r.ShortNames
			rt.status = slices.Contains(r.Subresources, "status")
		}
	}
	return out
}

// verbAllowed reports whether the resource serves verb.
func (rt *resourceType) verbAllowed(verb string) bool { return slices.Contains(rt.verbs, verb) }

// groupVersions returns the versions served in group, highest priority first.
func (s *Server) groupVersions(group string) []string {
	var out []string
	for _, rt := range s.types {
		if rt.gr.Group == group {
			out = append(out, rt.versions...)
		}
	}
	return manifest.SortVersions(out)
}

func (s *Server) apiGroup(group string) *metav1.APIGroup {
	versions := s.groupVersions(group)
	if len(versions) == 0 {
		return nil
	}
	g := &metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: group}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + v, Version: v})
	}
	g.PreferredVersion = g.Versions[0]
	return g
}

func (s *Server) apiGroupList() *metav1.APIGroupList {
	names := map[string]bool{}
	for _, rt := range s.types {
		if rt.gr.Group != "" {
			names[rt.gr.Group] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for g := range names {
		sorted = append(sorted, g)
	}
	slices.Sort(sorted)
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, g := range sorted {
		list.Groups = append(list.Groups, *s.apiGroup(g))
	}
	return list
}

func (s *Server) resourceList(group, version string) *metav1.APIResourceList {
	gv := schema.GroupVersion{Group: group, Version: version}
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, rt := range s.types {
		if rt.gr.Group != group || !rt.serves(version) {
			continue
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: rt.gr.Resource, SingularName: rt.singular, ShortNames: rt.shortNames, Namespaced: rt.namespaced, Kind: rt.kind, Verbs: rt.verbs,
		})
		if rt.status {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: rt.gr.Resource + "/status", Namespaced: rt.namespaced, Kind: rt.kind, Verbs: metav1.Verbs{"get", "patch", "update"},
			})
		}
	}
	if len(list.APIResources) == 0 {
		return nil
	}
	slices.SortFunc(list.APIResources, func(a, b metav1.APIResource) int { return strings.Compare(a.Name, b.Name) })
	return list
}
