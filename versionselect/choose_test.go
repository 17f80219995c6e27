package versionselect

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestSortedIsKubernetesOrder(t *testing.T) {
	v := []string{"v1alpha1", "v2", "foo", "v1", "v1beta2", "v1beta1", "bar", "v10", "v2beta1", "v11alpha2", "v1"}
	assert.Equal(t, []string{"v10", "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v11alpha2", "v1alpha1", "bar", "foo"}, sorted(v))
}

func TestChoose(t *testing.T) {
	gr := schema.GroupResource{Group: "example.io", Resource: "widgets"}
	tests := []struct {
		name           string
		source, target Versions
		user           []string
		version        string
		rule           Rule
	}{
		{"P0: user's first version supported by both",
			Versions{Versions: []string{"v1", "v1beta1", "v2alpha1"}, Preferred: "v1"}, Versions{Versions: []string{"v1", "v1beta1", "v2alpha1"}, Preferred: "v1"},
			[]string{"v2alpha1", "v1beta1"}, "v2alpha1", RuleUserPriority},
		{"P0 skips user versions present on one side only",
			Versions{Versions: []string{"v1", "v1beta1", "v3"}, Preferred: "v1"}, Versions{Versions: []string{"v1", "v1beta1", "v4"}, Preferred: "v1"},
			[]string{"v3", "v4", "v1beta1"}, "v1beta1", RuleUserPriority},
		{"user list with no shared version falls through to P1",
			Versions{Versions: []string{"v1", "v3"}, Preferred: "v1"}, Versions{Versions: []string{"v1", "v4"}, Preferred: "v1"},
			[]string{"v3", "v4"}, "v1", RuleTargetPreferred},
		{"a webhook-converted CRD's storage version, held by the backup, before the target's preferred",
			Versions{Versions: []string{"v1beta1", "v1"}, Preferred: "v1"}, Versions{Versions: []string{"v1", "v1beta1"}, Preferred: "v1", Storage: "v1beta1"},
			nil, "v1beta1", RuleStorageVersion},
		{"the user's priority before the storage version",
			Versions{Versions: []string{"v1beta1", "v1"}, Preferred: "v1"}, Versions{Versions: []string{"v1", "v1beta1"}, Preferred: "v1", Storage: "v1beta1"},
			[]string{"v1"}, "v1", RuleUserPriority},
		{"a storage version the backup does not hold falls through to P1",
			Versions{Versions: []string{"v1"}, Preferred: "v1"}, Versions{Versions: []string{"v1", "v1beta1"}, Preferred: "v1", Storage: "v1beta1"},
			nil, "v1", RuleTargetPreferred},
		{"P1: target's preferred, present in the backup",
			Versions{Versions: []string{"v1beta1", "v1"}, Preferred: "v1beta1"}, Versions{Versions: []string{"v1", "v1beta1"}, Preferred: "v1"},
			nil, "v1", RuleTargetPreferred},
		{"P2: source's preferred, served by the target",
			Versions{Versions: []string{"v1beta1", "v1beta2"}, Preferred: "v1beta2"}, Versions{Versions: []string{"v1", "v1beta2"}, Preferred: "v1"},
			nil, "v1beta2", RuleSourcePreferred},
		{"P3: highest-priority common version",
			Versions{Versions: []string{"v1alpha1", "v1beta1", "v1beta2", "v2alpha1"}, Preferred: "v2alpha1"}, Versions{Versions: []string{"v2", "v1beta1", "v1alpha1"}, Preferred: "v2"},
			nil, "v1beta1", RuleCommon},
		{"no common version: source's preferred is attempted",
			Versions{Versions: []string{"v1beta1"}, Preferred: "v1beta1"}, Versions{Versions: []string{"v1", "v2"}, Preferred: "v2"},
			nil, "v1beta1", RuleNoCommonVersion},
		{"target lacks the group",
			Versions{Versions: []string{"v1"}, Preferred: "v1"}, Versions{},
			[]string{"v1"}, "v1", RuleNotServed},
		{"one version on each side",
			Versions{Versions: []string{"v1"}, Preferred: "v1"}, Versions{Versions: []string{"v1"}, Preferred: "v1"},
			nil, "v1", RuleTargetPreferred},
		{"non-Kubernetes-style names rank last in P3",
			Versions{Versions: []string{"stable", "v1beta1", "edge"}, Preferred: "edge"}, Versions{Versions: []string{"stable", "v1beta1", "v2"}, Preferred: "v2"},
			nil, "v1beta1", RuleCommon},
		{"non-Kubernetes-style names alone",
			Versions{Versions: []string{"stable", "edge"}, Preferred: "edge"}, Versions{Versions: []string{"stable", "latest"}, Preferred: "latest"},
			nil, "stable", RuleCommon},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Choose(gr, tc.source, tc.target, tc.user)
			assert.Equal(t, tc.version, c.Version)
			assert.Equal(t, tc.rule, c.Rule)
			assert.NotEmpty(t, c.Explain())
			assert.Equal(t, tc.rule != RuleNoCommonVersion && tc.rule != RuleNotServed, c.Restorable())
		})
	}
	t.Run("core group", func(t *testing.T) {
		c := Choose(schema.GroupResource{Resource: "pods"}, Versions{Versions: []string{"v1"}, Preferred: "v1"}, Versions{Versions: []string{"v1"}, Preferred: "v1"}, nil)
		assert.Equal(t, "v1", c.Version)
		assert.Equal(t, "pods", c.GroupResource.String())
	})
	t.Run("versions are reported highest first", func(t *testing.T) {
		c := Choose(gr, Versions{Versions: []string{"v1beta1", "v1", "v1alpha1"}, Preferred: "v1"}, Versions{Versions: []string{"v1alpha1", "v2"}, Preferred: "v2"}, nil)
		assert.Equal(t, []string{"v1", "v1beta1", "v1alpha1"}, c.SourceVersions)
		assert.Equal(t, []string{"v2", "v1alpha1"}, c.TargetVersions)
	})
}
