package gomod

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Mismatches names each module taken at more than one version, with the version each
// module directory takes and the highest of them in semantic version order (a
// pre-release before its release, a pseudo-version before the release it precedes).
func TestMismatchesNameTheHighest(t *testing.T) {
	got := Mismatches(map[string]Versions{
		"test":     {"golang.org/x/net": "v0.58.0", "google.golang.org/protobuf": "v1.36.12-0.20260120151049-f2248ac996af", "k8s.io/utils": "v0.0.0-20260626114624-be93311217bd"},
		"csi":      {"golang.org/x/net": "v0.59.0", "google.golang.org/protobuf": "v1.36.12", "k8s.io/utils": "v0.0.0-20260626114624-be93311217bd"},
		"velero":   {"golang.org/x/net": "v0.100.0"},
		"cmd/same": {"k8s.io/utils": "v0.0.0-20260626114624-be93311217bd"},
	})
	assert.Equal(t, []Mismatch{
		{Path: "golang.org/x/net", By: map[string]string{"test": "v0.58.0", "csi": "v0.59.0", "velero": "v0.100.0"}, Highest: "v0.100.0"},
		{Path: "google.golang.org/protobuf", By: map[string]string{"test": "v1.36.12-0.20260120151049-f2248ac996af", "csi": "v1.36.12"}, Highest: "v1.36.12"},
	}, got)
	assert.Equal(t, "golang.org/x/net: csi v0.59.0 test v0.58.0 velero v0.100.0", got[0].String())
}
