package restore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// setOwnerReferences writes what Unstructured.SetOwnerReferences writes, without its
// reflection: the same maps, unset pointers left out, and no field for none.
func TestSetOwnerReferencesAsUnstructuredDoes(t *testing.T) {
	for _, refs := range [][]metav1.OwnerReference{
		nil,
		{},
		{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "u1"}},
		{
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "u1", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)},
			{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "u2", Controller: ptr.To(false)},
			{APIVersion: "example.com/v1", Kind: "Thing", Name: "t", UID: "u3", BlockOwnerDeletion: ptr.To(false)},
		},
	} {
		old := []any{map[string]any{"apiVersion": "v1", "kind": "Old", "name": "o", "uid": "u0", "extra": "x"}}
		want := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "n", "ownerReferences": old}}}
		got := want.DeepCopy()
		want.SetOwnerReferences(refs)
		setOwnerReferences(got, nil, refs)
		assert.Equal(t, want.Object, got.Object, "%v", refs)
	}
}
