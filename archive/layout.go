package archive

import (
	"errors"
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
// (directories listed as files do not occur: only regular files reach here). The
// strings it returns are substrings of p.
func parseItemPath(p string) (location, error) {
	const want = "want resources/<resource>[.<group>]/[<version>/]{cluster|namespaces/<namespace>}/<name>.json"
	rest, ok := strings.CutPrefix(p, resourcesDir+"/")
	grDir, rest, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		return location{}, fmt.Errorf("not an item path")
	}
	l := location{gr: parseGroupResource(grDir)}
	first, after, _ := strings.Cut(rest, "/")
	if first != clusterDir && first != namespacesDir {
		l.dir, rest = first, after
		first, after, _ = strings.Cut(rest, "/")
	}
	var file string
	switch first {
	case clusterDir:
		file = after
	case namespacesDir:
		l.namespace, file, _ = strings.Cut(after, "/")
		if l.namespace == "" {
			return location{}, errors.New(want)
		}
	default:
		return location{}, errors.New(want)
	}
	if file == "" || strings.Contains(file, "/") {
		return location{}, errors.New(want)
	}
	if !strings.HasSuffix(file, jsonSuffix) || len(file) == len(jsonSuffix) {
		return location{}, fmt.Errorf("item file name must be <name>.json")
	}
	l.name = strings.TrimSuffix(file, jsonSuffix)
	if l.gr.Resource == "" || (l.dir != "" && l.version() == "") {
		return location{}, fmt.Errorf("empty resource or version")
	}
	return l, nil
}
