package versionselect

import (
	"slices"

	"k8s.io/apimachinery/pkg/version"
)

// Compare orders two version names by Kubernetes priority: negative when a ranks below
// b, positive when above, zero when equal. v1 > v1beta2 > v1beta1 > v1alpha1 > "foo".
func Compare(a, b string) int {
	return version.CompareKubeAwareVersionStrings(a, b)
}

// Sort orders versions from highest to lowest Kubernetes priority, in place.
func Sort(versions []string) {
	slices.SortFunc(versions, func(a, b string) int { return Compare(b, a) })
}

// sorted returns a sorted copy without duplicates.
func sorted(versions []string) []string {
	out := slices.Clone(versions)
	Sort(out)
	return slices.Compact(out)
}
