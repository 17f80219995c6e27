// Package discovery holds what a real kube-apiserver serves, as its discovery documents
// say: every group, version and resource, with kind, scope, verbs and subresources. It
// is recorded from the version the integration tests run (Record), embedded here, and
// is both what memcluster serves and what the contract suite checks a server against.
package discovery

import (
	_ "embed"
	"encoding/json"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Resource is one resource of one group-version.
type Resource struct {
	Group      string   `json:"group"`
	Version    string   `json:"version"`
	Resource   string   `json:"resource"`
	Kind       string   `json:"kind"`
	Singular   string   `json:"singular,omitempty"`
	ShortNames []string `json:"shortNames,omitempty"`
	Namespaced bool     `json:"namespaced"`
	Verbs      []string `json:"verbs"`
	// Subresources are the resource's subresources: "status", "scale", ...
	Subresources []string `json:"subresources,omitempty"`
	// Preferred: the version is its group's preferred one.
	Preferred bool `json:"preferred,omitempty"`
}

// Recorded is the discovery of a real server.
type Recorded struct {
	Server    string     `json:"server"` // its version, e.g. v1.37.2
	Resources []Resource `json:"resources"`
}

//go:embed kube-apiserver.json
var recorded []byte

// KubeAPIServer returns the recorded discovery of kube-apiserver.
func KubeAPIServer() Recorded {
	var r Recorded
	if err := json.Unmarshal(recorded, &r); err != nil {
		panic("memcluster/discovery: the embedded recording does not decode: " + err.Error())
	}
	return r
}

// Record turns a server's discovery documents into a Recorded, resources in group,
// version and resource order.
func Record(server string, groups *metav1.APIGroupList, lists []*metav1.APIResourceList) Recorded {
	preferred := map[string]string{}
	for _, g := range groups.Groups {
		preferred[g.Name] = g.PreferredVersion.Version
	}
	subresources := map[[3]string][]string{}
	for _, l := range lists {
		gv := splitGroupVersion(l.GroupVersion)
		for _, r := range l.APIResources {
			if parent, sub, ok := strings.Cut(r.Name, "/"); ok {
				k := [3]string{gv[0], gv[1], parent}
				subresources[k] = append(subresources[k], sub)
			}
		}
	}
	var out []Resource
	for _, l := range lists {
		gv := splitGroupVersion(l.GroupVersion)
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			verbs := slices.Sorted(slices.Values([]string(r.Verbs)))
			subs := slices.Sorted(slices.Values(subresources[[3]string{gv[0], gv[1], r.Name}]))
			out = append(out, Resource{Group: gv[0], Version: gv[1], Resource: r.Name, Kind: r.Kind, Singular: r.SingularName,
				ShortNames: slices.Sorted(slices.Values(r.ShortNames)), Namespaced: r.Namespaced, Verbs: verbs,
				Subresources: subs, Preferred: preferred[gv[0]] == gv[1]})
		}
	}
	slices.SortFunc(out, func(a, b Resource) int {
		return strings.Compare(a.Group+"/"+a.Version+"/"+a.Resource, b.Group+"/"+b.Version+"/"+b.Resource)
	})
	return Recorded{Server: server, Resources: out}
}

func splitGroupVersion(gv string) [2]string {
	if g, v, ok := strings.Cut(gv, "/"); ok {
		return [2]string{g, v}
	}
	return [2]string{"", gv}
}
