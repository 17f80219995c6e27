package restore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/restoregraph/restoregraph/memcluster"
)

func openClusterJournal(t testing.TB, tgt Target, name string) *ClusterJournal {
	t.Helper()
	j, err := OpenClusterJournal(context.Background(), tgt.Dynamic, "default", name, nil)
	require.NoError(t, err)
	return j
}

// The journal in the cluster keeps what a second run cannot find in the target (the
// operations started, the hooks that ran), as many ConfigMaps as it needs, and reads
// back what it wrote; an object that was only created costs no request.
func TestClusterJournal(t *testing.T) {
	ctx := context.Background()
	_, tgt := cluster(t, memcluster.Options{})
	_, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "default"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cms := tgt.Dynamic.Resource(configMapsGVR).Namespace("default")
	owner := &metav1.OwnerReference{APIVersion: "velero.io/v1", Kind: "Restore", Name: "r", UID: "restore-uid"}
	j, err := OpenClusterJournal(ctx, tgt.Dynamic, "default", "journal-r", owner)
	require.NoError(t, err)
	assert.Empty(t, j.Journaled())

	require.NoError(t, j.Record("plain", Journaled{New: "P", Status: Restored}))
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: JournalLabel + "=journal-r"})
	require.NoError(t, err)
	assert.Empty(t, list.Items, "an object only created is found by its source UID: not written")

	started := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	op := Operation{Plugin: "copier", ID: "op-1", Started: started, Phase: OperationInProgress}
	require.NoError(t, j.Record("claim", Journaled{New: "C", Status: Restored, Operations: []Operation{op}}))
	require.NoError(t, j.Record("pod/with:hooks", Journaled{New: "H", Status: Restored, HooksRan: true}))
	done := op
	done.Phase, done.Ended = OperationCompleted, started.Add(time.Minute)
	require.NoError(t, j.Record("claim", Journaled{New: "C", Status: Restored, Operations: []Operation{done}}))

	cm, err := cms.Get(ctx, "journal-r-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []metav1.OwnerReference{*owner}, cm.GetOwnerReferences(), "deleted with its owner")
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	assert.Len(t, data, 2, "the claim once, its last record; the Pod under a key made of its UID's hex")

	again, err := OpenClusterJournal(ctx, tgt.Dynamic, "default", "journal-r", owner)
	require.NoError(t, err)
	assert.Equal(t, map[types.UID]Journaled{
		"claim":          {New: "C", Status: Restored, Operations: []Operation{done}},
		"pod/with:hooks": {New: "H", Status: Restored, HooksRan: true},
	}, again.Journaled())

	// Bounded ConfigMaps: a record that would pass MaxBytes goes into the next.
	again.MaxBytes = 400
	for _, src := range []types.UID{"a", "b", "c", "d", "e"} {
		require.NoError(t, again.Record(src, Journaled{New: "N" + src, Status: Restored, Operations: []Operation{op}}))
	}
	list, err = cms.List(ctx, metav1.ListOptions{LabelSelector: JournalLabel + "=journal-r"})
	require.NoError(t, err)
	assert.Greater(t, len(list.Items), 2, "split over ConfigMaps")
	for _, cm := range list.Items {
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		size := 0
		for k, v := range data {
			size += len(k) + len(v)
		}
		assert.LessOrEqual(t, size, 400, cm.GetName())
	}
	third := openClusterJournal(t, tgt, "journal-r")
	assert.Len(t, third.Journaled(), 7, "every record, from every ConfigMap")
	assert.Equal(t, Journaled{New: "Ne", Status: Restored, Operations: []Operation{op}}, third.Journaled()["e"])
	assert.Empty(t, openClusterJournal(t, tgt, "journal-other").Journaled(), "journals apart by name")

	// A record that cannot be read names its ConfigMap and key.
	cm, err = cms.Get(ctx, "journal-r-0", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(cm.Object, "{not json", "data", "claim"))
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = OpenClusterJournal(ctx, tgt.Dynamic, "default", "journal-r", nil)
	require.ErrorIs(t, err, ErrJournalCorrupt)
	assert.ErrorContains(t, err, "ConfigMap default/journal-r-0, key claim")

	_, err = OpenClusterJournal(ctx, tgt.Dynamic, "default", strings.Repeat("x", 260), nil)
	assert.ErrorContains(t, err, "journal name")
}

// Another process of the same restore (one that lost its Lease and has not stopped yet)
// may make the ConfigMap between this one's patch and its create: the record is then
// patched in, not lost.
func TestClusterJournalWhenAnotherMadeTheConfigMap(t *testing.T) {
	theirs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "raced-0", "namespace": "default", "labels": map[string]any{JournalLabel: "raced"}},
		"data":     map[string]any{}}}
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), theirs)
	first := true
	dyn.PrependReactor("patch", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		if first { // as if it were not there yet
			first = false
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "raced-0")
		}
		return false, nil, nil
	})
	j, err := OpenClusterJournal(context.Background(), dyn, "default", "raced", nil)
	require.NoError(t, err)
	op := Operation{Plugin: "copier", ID: "op-1", Phase: OperationInProgress}
	require.NoError(t, j.Record("claim", Journaled{New: "C", Status: Restored, Operations: []Operation{op}}))
	again, err := OpenClusterJournal(context.Background(), dyn, "default", "raced", nil)
	require.NoError(t, err)
	assert.Equal(t, Journaled{New: "C", Status: Restored, Operations: []Operation{op}}, again.Journaled()["claim"])
}
