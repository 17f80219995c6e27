package versionselect

import (
	"slices"

	"github.com/restoregraph/restoregraph/manifest"
)

// sorted returns a copy of versions in Kubernetes priority order, without duplicates.
// The order itself is manifest.CompareVersions.
func sorted(versions []string) []string {
	return manifest.SortVersions(slices.Clone(versions))
}
