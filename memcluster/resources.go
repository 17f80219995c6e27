package memcluster

import (
	"slices"
	"strings"

	"github.com/restoregraph/restoregraph/manifest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// resourceType is one served resource.
type resourceType struct {
	gr         schema.GroupResource
	kind       string
	singular   string
	namespaced bool
	versions   []string // served, highest priority first
	status     bool     // has a status subresource
	generation bool     // sets metadata.generation, as kinds with a spec do
	crd        string   // the CRD that serves it; "" for built-ins
}

func (rt *resourceType) serves(v string) bool { return slices.Contains(rt.versions, v) }

var allVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

func builtin(group, resource, kind string, namespaced, status bool) *resourceType {
	// As on a real server, only kinds whose spec is reconciled carry a generation.
	generation := group == "apps" || group == "batch" || group == "apiextensions.k8s.io"
	return &resourceType{gr: schema.GroupResource{Group: group, Resource: resource}, kind: kind,
		singular: strings.ToLower(kind), namespaced: namespaced, versions: []string{"v1"}, status: status, generation: generation}
}

// builtins are the resources a memcluster serves from the start: the core and apps
// kinds of everyday applications, what the Cluster API demo needs from core, and CRDs.
func builtins() []*resourceType {
	return []*resourceType{
		builtin("", "namespaces", "Namespace", false, true),
		builtin("", "configmaps", "ConfigMap", true, false),
		builtin("", "secrets", "Secret", true, false),
		builtin("", "serviceaccounts", "ServiceAccount", true, false),
		builtin("", "services", "Service", true, true),
		builtin("", "endpoints", "Endpoints", true, false),
		builtin("", "pods", "Pod", true, true),
		builtin("", "persistentvolumeclaims", "PersistentVolumeClaim", true, true),
		builtin("", "persistentvolumes", "PersistentVolume", false, true),
		builtin("", "limitranges", "LimitRange", true, false),
		builtin("", "resourcequotas", "ResourceQuota", true, true),
		builtin("apps", "deployments", "Deployment", true, true),
		builtin("apps", "replicasets", "ReplicaSet", true, true),
		builtin("apps", "statefulsets", "StatefulSet", true, true),
		builtin("apps", "daemonsets", "DaemonSet", true, true),
		builtin("batch", "jobs", "Job", true, true),
		builtin("rbac.authorization.k8s.io", "roles", "Role", true, false),
		builtin("rbac.authorization.k8s.io", "rolebindings", "RoleBinding", true, false),
		builtin("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", false, false),
		builtin("rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", false, false),
		builtin("apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition", false, true),
	}
}

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
			Name: rt.gr.Resource, SingularName: rt.singular, Namespaced: rt.namespaced, Kind: rt.kind, Verbs: allVerbs,
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
