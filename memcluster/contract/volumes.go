package contract

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	claims  = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	volumes = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
)

// volumeBinding: a claim that names its volume, and a volume whose claimRef names its
// claim, are Bound to each other, whichever is made first, as a restore makes them: the
// volume's claimRef takes the claim's UID, the claim its volumeName. A claim that names
// no volume and asks for more than any volume holds stays Pending. (The real binder
// gives a claim without a volume name any Available volume of its class that satisfies
// it: the volumes' class is the run's own, so that no claim of another test takes pv-b
// before data-b does, and data-none asks for more than pv-b holds.)
func (s *suite) volumeBinding(t *testing.T) {
	ctx := s.ctx(t)
	cl, vol := s.client.Resource(claims).Namespace(s.ns), s.client.Resource(volumes)
	class := s.ns + "-static" // no StorageClass of the name: bound as it names, at once
	volume := func(name, claim string) *unstructured.Unstructured {
		spec := map[string]any{"capacity": map[string]any{"storage": "1Gi"}, "accessModes": []any{"ReadWriteOnce"},
			"persistentVolumeReclaimPolicy": "Retain", "storageClassName": class,
			"hostPath": map[string]any{"path": "/tmp/" + name}}
		if claim != "" {
			spec["claimRef"] = map[string]any{"kind": "PersistentVolumeClaim", "namespace": s.ns, "name": claim}
		}
		return obj("v1", "PersistentVolume", "", s.ns+"-"+name, map[string]any{"spec": spec})
	}
	claim := func(name, volume, size string) *unstructured.Unstructured {
		spec := map[string]any{"accessModes": []any{"ReadWriteOnce"}, "storageClassName": class,
			"resources": map[string]any{"requests": map[string]any{"storage": size}}}
		if volume != "" {
			spec["volumeName"] = s.ns + "-" + volume
		}
		return obj("v1", "PersistentVolumeClaim", s.ns, name, map[string]any{"spec": spec})
	}
	t.Cleanup(func() {
		for _, v := range []string{"pv-a", "pv-b"} {
			_ = vol.Delete(ctx, s.ns+"-"+v, metav1.DeleteOptions{})
		}
	})
	// The volume first, claimed by name; the claim first, naming its volume.
	_, err := vol.Create(ctx, volume("pv-a", "data-a"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cl.Create(ctx, claim("data-a", "pv-a", "1Gi"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cl.Create(ctx, claim("data-b", "pv-b", "1Gi"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = vol.Create(ctx, volume("pv-b", ""), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cl.Create(ctx, claim("data-none", "", "5Gi"), metav1.CreateOptions{})
	require.NoError(t, err)

	phase := func(u *unstructured.Unstructured) string {
		p, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		return p
	}
	for _, c := range []string{"data-a", "data-b"} {
		volumeName := s.ns + "-pv-" + c[len("data-"):]
		s.eventually(t, c+" Bound", func() bool {
			got, err := cl.Get(ctx, c, metav1.GetOptions{})
			return err == nil && phase(got) == "Bound"
		})
		got, err := cl.Get(ctx, c, metav1.GetOptions{})
		require.NoError(t, err)
		vn, _, _ := unstructured.NestedString(got.Object, "spec", "volumeName")
		assert.Equal(t, volumeName, vn)
		s.eventually(t, volumeName+" Bound", func() bool {
			v, err := vol.Get(ctx, volumeName, metav1.GetOptions{})
			return err == nil && phase(v) == "Bound"
		})
		v, err := vol.Get(ctx, volumeName, metav1.GetOptions{})
		require.NoError(t, err)
		uid, _, _ := unstructured.NestedString(v.Object, "spec", "claimRef", "uid")
		assert.Equal(t, string(got.GetUID()), uid, "the volume's claimRef names the claim's UID")
	}
	none, err := cl.Get(ctx, "data-none", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, []string{"", "Pending"}, phase(none), "nothing binds a claim no volume satisfies")
}
