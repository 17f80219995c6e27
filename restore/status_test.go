package restore

import (
	"context"
	"slices"
	"testing"

	"github.com/restoregraph/restoregraph/filter"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// statusWidget is a Widget in namespace a whose status says its name, with the
// velero.io/restore-status annotation when annotation is set.
func statusWidget(name, annotation string) map[string]any {
	meta := map[string]any{"name": name, "namespace": "a", "uid": "w-" + name}
	if annotation != "" {
		meta["annotations"] = map[string]any{RestoreStatusAnnotation: annotation}
	}
	return map[string]any{"apiVersion": "example.io/v2", "kind": "Widget", "metadata": meta,
		"spec": map[string]any{"size": int64(1)}, "status": map[string]any{"was": name}}
}

// Status is restored as Velero's restoreStatus says (none without it; every resource
// included but those excluded), and an object's velero.io/restore-status annotation
// overrides it either way.
func TestRestoreStatusAsVelero(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		status *StatusSelection
		kept   []string // the widgets restored with their status
	}{
		{"no restoreStatus: only what asks", nil, []string{"asks"}},
		{"widgets included", &StatusSelection{IncludedResources: []string{"widgets"}}, []string{"plain", "asks"}},
		{"every resource, by kind", &StatusSelection{IncludedResources: []string{"*"}}, []string{"plain", "asks"}},
		{"every resource but widgets", &StatusSelection{ExcludedResources: []string{"widget.example.io"}}, []string{"asks"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := widgetBackup(t, statusWidget("plain", ""), statusWidget("asks", "true"), statusWidget("refuses", "False"))
			tgt := widgetTarget(t)
			rep, err := restoreAll(ctx, tgt, b, testOptions{RestoreStatus: tc.status})
			require.NoError(t, err)
			require.True(t, rep.OK(), firstFailure(rep))
			for _, name := range []string{"plain", "asks", "refuses"} {
				w, err := tgt.Dynamic.Resource(widgets.WithVersion("v2")).Namespace("a").Get(ctx, name, metav1.GetOptions{})
				require.NoError(t, err)
				got, _, _ := unstructured.NestedString(w.Object, "status", "was")
				if assert.Contains(t, []string{"", name}, got) && slices.Contains(tc.kept, name) {
					assert.Equal(t, name, got, "%s: its status is restored", name)
				} else {
					assert.Empty(t, got, "%s: its status is not restored", name)
				}
			}
		})
	}

	_, err := planAll(ctx, widgetTarget(t), widgetBackup(t), testOptions{RestoreStatus: &StatusSelection{IncludedResources: []string{"gadgets"}}})
	var unknown *filter.UnknownResourceError
	require.ErrorAs(t, err, &unknown)
	assert.ErrorContains(t, err, "restore status")

	// A saved plan carries the selection.
	p, err := planAll(ctx, widgetTarget(t), widgetBackup(t), testOptions{RestoreStatus: &StatusSelection{IncludedResources: []string{"widgets"}, ExcludedResources: []string{"cm"}}})
	require.NoError(t, err)
	assert.Equal(t, &StatusSelection{IncludedResources: []string{"widgets"}, ExcludedResources: []string{"cm"}}, saveAndRead(t, p).Selection.RestoreStatus)
}
