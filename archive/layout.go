package archive

import (
	"fmt"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	resourcesDir    = "resources"
	metadataVersion = "metadata/version"
	// ManifestPath is where a backup carries its manifest (manifest.json, gzip'd), before
	// every body, so that a reader can take it instead of reading the bodies' metadata.
	ManifestPath    = "metadata/manifest.json.gz"
	preferredSuffix = "-preferredversion"
	clusterDir      = "cluster"
	namespacesDir   = "namespaces"
	Format10        = "1.0"
	Format11        = "1.1.0"
	jsonSuffix      = ".json"
)

// location is what an item path says: group-resource, version directory, namespace, name.
type location struct {
	gr        schema.GroupResource
	dir       string // "" for the unversioned (format 1.0) path; else "v1" or "v1-preferredversion"
	namespace string
	name      string
}

func (l location) version() string { return strings.TrimSuffix(l.dir, preferredSuffix) }
func (l location) preferred() bool { return strings.HasSuffix(l.dir, preferredSuffix) }

// parseGroupResource reads "deployments.apps" or "pods" (the core group).
func parseGroupResource(s string) schema.GroupResource {
	resource, group, _ := strings.Cut(s, ".")
	return schema.GroupResource{Group: group, Resource: resource}
}

func groupResourceDir(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Resource + "." + gr.Group
}

// itemPath returns the path of an item in the tarball.
func itemPath(l location) string {
	parts := []string{resourcesDir, groupResourceDir(l.gr)}
	if l.dir != "" {
		parts = append(parts, l.dir)
	}
	if l.namespace == "" {
		parts = append(parts, clusterDir)
	} else {
		parts = append(parts, namespacesDir, l.namespace)
	}
	return path.Join(append(parts, l.name+jsonSuffix)...)
}

// parseItemPath reads a path below resources/. ok is false for paths that are not items
// (directories listed as files do not occur: only regular files reach here).
func parseItemPath(p string) (location, error) {
	parts := strings.Split(p, "/")
	if len(parts) < 4 || parts[0] != resourcesDir {
		return location{}, fmt.Errorf("not an item path")
	}
	l := location{gr: parseGroupResource(parts[1])}
	rest := parts[2:]
	if rest[0] != clusterDir && rest[0] != namespacesDir {
		l.dir, rest = rest[0], rest[1:]
	}
	switch {
	case len(rest) == 2 && rest[0] == clusterDir:
	case len(rest) == 3 && rest[0] == namespacesDir && rest[1] != "":
		l.namespace = rest[1]
	default:
		return location{}, fmt.Errorf("want resources/<resource>[.<group>]/[<version>/]{cluster|namespaces/<namespace>}/<name>.json")
	}
	file := rest[len(rest)-1]
	if !strings.HasSuffix(file, jsonSuffix) || len(file) == len(jsonSuffix) {
		return location{}, fmt.Errorf("item file name must be <name>.json")
	}
	l.name = strings.TrimSuffix(file, jsonSuffix)
	if l.gr.Resource == "" || (l.dir != "" && l.version() == "") {
		return location{}, fmt.Errorf("empty resource or version")
	}
	return l, nil
}
