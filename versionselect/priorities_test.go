package versionselect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
)

func TestParsePriorities(t *testing.T) {
	text := `
rockbands.music.example.io = v2beta1, v2beta2

  orchestras.music.example.io=v2,v3alpha1
# a comment
pods=v1
`
	p, warnings, err := ParsePriorities(strings.NewReader(text), ParseOptions{})
	require.NoError(t, err)
	assert.Empty(t, warnings)
	assert.Equal(t, Priorities{
		{Group: "music.example.io", Resource: "rockbands"}:  {"v2beta1", "v2beta2"},
		{Group: "music.example.io", Resource: "orchestras"}: {"v2", "v3alpha1"},
		{Resource: "pods"}: {"v1"},
	}, p)
}

func TestParsePrioritiesErrors(t *testing.T) {
	tests := []struct{ line, reason string }{
		{"pods", "missing '='"},
		{"=v1", "no resource"},
		{"pods=", "no versions"},
		{"pods=v1,,v2", "version 2 is empty"},
		{"pods=v1,v1", "listed twice"},
		{"Pods=v1", "resource \"Pods\""},
		{"pods.Bad_Group=v1", "group \"Bad_Group\""},
		{"pods=V1", "version \"V1\""},
		{"deployments.apps=v1\ndeployments.apps=v1beta1", "already given on line 2"},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			text := "configmaps=v1\n" + tc.line + "\n"
			_, _, err := ParsePriorities(strings.NewReader(text), ParseOptions{})
			var pe *PriorityError
			require.ErrorAs(t, err, &pe)
			assert.Contains(t, pe.Reason, tc.reason)
			wantLine := 2 + strings.Count(tc.line, "\n")
			assert.Equal(t, wantLine, pe.Line)

			// Lenient: the bad line is skipped with a warning; the rest stands.
			p, warnings, err := ParsePriorities(strings.NewReader(text), ParseOptions{Lenient: true})
			require.NoError(t, err)
			require.Len(t, warnings, 1)
			assert.Equal(t, wantLine, warnings[0].Line)
			assert.Equal(t, []string{"v1"}, p[schema.GroupResource{Resource: "configmaps"}])
		})
	}
}

func TestReadPrioritiesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prio")
	require.NoError(t, os.WriteFile(path, []byte("pods=v1\nbad\n"), 0o644))
	_, _, err := ReadPrioritiesFile(path, ParseOptions{})
	assert.ErrorContains(t, err, path)
	var pe *PriorityError
	assert.True(t, errors.As(err, &pe))
	assert.Equal(t, 2, pe.Line)
}

func TestLoadPriorities(t *testing.T) {
	ctx := context.Background()
	cm := func(name string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: name}, Data: data}
	}
	t.Run("default name and key", func(t *testing.T) {
		cs := fake.NewClientset(cm(DefaultConfigMapName, map[string]string{ConfigMapKey: "pods=v1\n"}))
		p, _, err := LoadPriorities(ctx, cs.CoreV1(), "velero", "", ParseOptions{})
		require.NoError(t, err)
		assert.Equal(t, []string{"v1"}, p[schema.GroupResource{Resource: "pods"}])
	})
	t.Run("the only key, whatever its name", func(t *testing.T) {
		cs := fake.NewClientset(cm("mine", map[string]string{"prio": "deployments.apps=v1"}))
		p, _, err := LoadPriorities(ctx, cs.CoreV1(), "velero", "mine", ParseOptions{})
		require.NoError(t, err)
		assert.Len(t, p, 1)
	})
	t.Run("absent ConfigMap: no priorities", func(t *testing.T) {
		p, _, err := LoadPriorities(ctx, fake.NewClientset().CoreV1(), "velero", "", ParseOptions{})
		require.NoError(t, err)
		assert.Empty(t, p)
	})
	t.Run("ambiguous keys", func(t *testing.T) {
		cs := fake.NewClientset(cm(DefaultConfigMapName, map[string]string{"a": "", "b": ""}))
		_, _, err := LoadPriorities(ctx, cs.CoreV1(), "velero", "", ParseOptions{})
		assert.ErrorContains(t, err, ConfigMapKey)
	})
	t.Run("malformed line names the ConfigMap and the line", func(t *testing.T) {
		cs := fake.NewClientset(cm(DefaultConfigMapName, map[string]string{ConfigMapKey: "pods=v1\nnonsense\n"}))
		_, _, err := LoadPriorities(ctx, cs.CoreV1(), "velero", "", ParseOptions{})
		assert.ErrorContains(t, err, "velero/enableapigroupversions")
		assert.ErrorContains(t, err, "line 2")
	})
}

func FuzzParsePriorities(f *testing.F) {
	f.Add("pods=v1\ndeployments.apps = v1, v1beta1\n\n# c\n")
	f.Add("a.b.c=v1,v2,v3")
	f.Add("=,=\n\x00")
	f.Fuzz(func(t *testing.T, text string) {
		p, _, err := ParsePriorities(strings.NewReader(text), ParseOptions{})
		if err != nil {
			var pe *PriorityError
			if !errors.As(err, &pe) && !strings.Contains(err.Error(), "token too long") {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		lp, warnings, err := ParsePriorities(strings.NewReader(text), ParseOptions{Lenient: true})
		if err != nil || len(warnings) != 0 || len(lp) != len(p) {
			t.Fatalf("lenient parse of valid text differs: %v %v", err, warnings)
		}
		for gr, vs := range p {
			if gr.Resource == "" || len(vs) == 0 {
				t.Fatalf("accepted an empty entry %v=%v", gr, vs)
			}
		}
	})
}
