package versionselect

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func crd(group, plural string, versions ...apiextv1.CustomResourceDefinitionVersion) *apiextv1.CustomResourceDefinition {
	return &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: group, Names: apiextv1.CustomResourceDefinitionNames{Plural: plural, Kind: "X"}, Versions: versions,
		},
	}
}

func ver(name string, served, storage bool) apiextv1.CustomResourceDefinitionVersion {
	return apiextv1.CustomResourceDefinitionVersion{Name: name, Served: served, Storage: storage}
}

func TestValidateCRDVersions(t *testing.T) {
	tests := []struct {
		name  string
		crd   *apiextv1.CustomResourceDefinition
		rules []CRDRule
	}{
		{"valid", crd("x.io", "ws", ver("v1", true, true), ver("v1beta1", true, false)), nil},
		{"duplicate name", crd("x.io", "ws", ver("v1", true, true), ver("v1", true, false)), []CRDRule{CRDVersionNames}},
		{"invalid name", crd("x.io", "ws", ver("V1_0", true, true)), []CRDRule{CRDVersionNames}},
		{"two storage versions", crd("x.io", "ws", ver("v1", true, true), ver("v2", true, true)), []CRDRule{CRDOneStorage}},
		{"no storage version", crd("x.io", "ws", ver("v1", true, false)), []CRDRule{CRDOneStorage}},
		{"nothing served", crd("x.io", "ws", ver("v1", false, true)), []CRDRule{CRDServedVersion}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateCRDVersions(tc.crd)
			var got []CRDRule
			for _, e := range unjoin(err) {
				var ve *CRDVersionError
				require.ErrorAs(t, e, &ve)
				assert.Equal(t, "ws.x.io", ve.CRD)
				got = append(got, ve.Rule)
			}
			assert.Equal(t, tc.rules, got)
		})
	}
	t.Run("stored version dropped from spec", func(t *testing.T) {
		c := crd("x.io", "ws", ver("v1", true, true))
		c.Status.StoredVersions = []string{"v1alpha1", "v1"}
		var ve *CRDVersionError
		require.ErrorAs(t, ValidateCRDVersions(c), &ve)
		assert.Equal(t, CRDStoredListed, ve.Rule)
		assert.Contains(t, ve.Error(), "v1alpha1")
	})
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestPreferredVersionIgnoresListOrderAndUnserved(t *testing.T) {
	c := crd("x.io", "ws", ver("v1alpha1", true, false), ver("v1beta1", true, true), ver("v1", true, false), ver("v2", false, false))
	v, ok := PreferredVersion(c)
	assert.True(t, ok)
	assert.Equal(t, "v1", v, "highest served, whatever the order; v2 is not served")
	assert.Equal(t, []string{"v1", "v1beta1", "v1alpha1"}, ServedVersions(c))
	_, ok = PreferredVersion(crd("x.io", "ws", ver("v1", false, true)))
	assert.False(t, ok)
}

func TestDecodeCRD(t *testing.T) {
	v1 := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"ws.x.io"},
		"spec":{"group":"x.io","names":{"plural":"ws","kind":"W"},"scope":"Namespaced","versions":[{"name":"v1beta1","served":true,"storage":false},{"name":"v1","served":true,"storage":true}]},
		"status":{"storedVersions":["v1"]}}`
	c, err := DecodeCRD([]byte(v1))
	require.NoError(t, err)
	assert.Equal(t, "ws", CRDGroupResource(c).Resource)
	assert.Equal(t, []string{"v1", "v1beta1"}, ServedVersions(c))
	assert.NoError(t, ValidateCRDVersions(c))

	single := `{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"CustomResourceDefinition","metadata":{"name":"ws.x.io"},
		"spec":{"group":"x.io","names":{"plural":"ws","kind":"W"},"version":"v1alpha1"}}`
	c, err = DecodeCRD([]byte(single))
	require.NoError(t, err)
	assert.Equal(t, []string{"v1alpha1"}, ServedVersions(c))
	assert.NoError(t, ValidateCRDVersions(c))

	multi := `{"apiVersion":"apiextensions.k8s.io/v1beta1","metadata":{"name":"ws.x.io"},
		"spec":{"group":"x.io","names":{"plural":"ws"},"version":"v1alpha1","versions":[{"name":"v1alpha1","served":false,"storage":false},{"name":"v1beta1","served":true,"storage":true}]}}`
	c, err = DecodeCRD([]byte(multi))
	require.NoError(t, err)
	assert.Equal(t, []string{"v1beta1"}, ServedVersions(c))

	for _, bad := range []string{`{"apiVersion":"v1","kind":"ConfigMap"}`, `{"apiVersion":"apiextensions.k8s.io/v1","spec":{}}`, `not json`} {
		_, err := DecodeCRD([]byte(bad))
		assert.Error(t, err, bad)
	}
}
