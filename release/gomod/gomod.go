// Package gomod writes the go.mod files of a release commit. During development the
// nested modules reach the library and each other through replace directives, which
// go install MODULE@VERSION refuses; on a release commit each requires the others at the
// release's version, and has no replace directive left (the command's kopia replace,
// which Velero's module needs, included: no package the command builds comes from
// kopia, so the upstream release's go.mod serves its module graph).
package gomod

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// Library is the root module's path.
const Library = "github.com/restoregraph/restoregraph"

// Released are the nested modules a release tags, by directory, with the modules of
// the repository each requires.
var Released = map[string][]string{
	"velero":           {Library},
	"cmd/restoregraph": {Library, Library + "/velero"},
}

// Prepare rewrites the go.mod files of the released nested modules under repo for
// version: each requires the repository's modules it requires at version, and has no
// replace directive.
func Prepare(repo, version string) error {
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return fmt.Errorf("gomod: %q is not a release version (vX.Y.Z, or vX.Y.Z-pre)", version)
	}
	for dir, requires := range Released {
		file := filepath.Join(repo, dir, "go.mod")
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		f, err := modfile.Parse(file, data, nil)
		if err != nil {
			return err
		}
		for _, path := range requires {
			if err := f.AddRequire(path, version); err != nil {
				return err
			}
		}
		for _, r := range append([]*modfile.Replace(nil), f.Replace...) {
			if err := f.DropReplace(r.Old.Path, r.Old.Version); err != nil {
				return err
			}
		}
		f.Cleanup()
		out, err := f.Format()
		if err != nil {
			return err
		}
		if err := os.WriteFile(file, out, 0o644); err != nil {
			return err
		}
	}
	return nil
}
