package velero

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/hook"
	"github.com/restoregraph/restoregraph/restore"
)

// A Restore with every field restoregraph supports, as velero restore create -o yaml
// writes it (the empty hooks, timeout and uploader configuration included).
const fullRestore = `apiVersion: velero.io/v1
kind: Restore
metadata:
  name: shop-copy
  namespace: velero
spec:
  backupName: shop-and-fleet
  includedNamespaces: [shop]
  excludedNamespaces: [fleet]
  includedResources: ['*']
  excludedResources: [events]
  includeClusterResources: false
  namespaceMapping:
    shop: shop-copy
  orLabelSelectors:
  - matchLabels: {app: web}
  - matchExpressions:
    - {key: tier, operator: In, values: [db, cache]}
  restorePVs: false
  restoreStatus:
    includedResources: [deployments]
    excludedResources: [pods]
  preserveNodePorts: true
  existingResourcePolicy: update
  resourceModifier:
    apiGroup: ""
    kind: configmap
    name: rules
  hooks:
    resources:
    - name: db
      includedNamespaces: [shop]
      includedResources: [pods]
      labelSelector: {matchLabels: {app: db}}
      postHooks:
      - init:
          initContainers:
          - {name: fetch, image: busybox, command: [fetch.sh]}
      - exec:
          container: db
          command: [psql, -c, select 1]
          onError: Fail
          execTimeout: 1m
          waitTimeout: 5m
          waitForReady: true
  itemOperationTimeout: 2h
  uploaderConfig: {writeSparseFiles: true, parallelFilesDownload: 4}
status:
  phase: Completed
`

func TestReadRestoreTakesEverySupportedField(t *testing.T) {
	r, err := ReadRestore([]byte(fullRestore))
	require.NoError(t, err)
	no := false
	assert.Equal(t, "shop-copy", r.Name)
	assert.Equal(t, "velero", r.Namespace)
	assert.Equal(t, "shop-and-fleet", r.Backup)
	assert.Empty(t, r.Schedule)
	assert.Equal(t, "rules", r.ModifierConfigMap)
	assert.Equal(t, 2*time.Hour, r.ItemOperationTimeout)
	yes := true
	assert.Equal(t, &velerov1.UploaderConfigForRestore{WriteSparseFiles: &yes, ParallelFilesDownload: 4}, r.UploaderConfig)
	or := r.Selection.Filter.OrSelectors
	r.Selection.Filter.OrSelectors = nil
	assert.Equal(t, "app=web or tier in (cache,db)", filter.OrString(or))
	assert.Equal(t, restore.Selection{
		Filter: filter.Spec{IncludeNamespaces: []string{"shop"}, ExcludeNamespaces: []string{"fleet"}, IncludeResources: []string{"*"},
			ExcludeResources: []string{"events"}, IncludeClusterResources: &no},
		NamespaceMappings: map[string]string{"shop": "shop-copy"},
		RestoreStatus:     &restore.StatusSelection{IncludedResources: []string{"deployments"}, ExcludedResources: []string{"pods"}},
		PreserveNodePorts: true, Existing: restore.Update, RestorePVs: &no,
		Hooks: &hook.Spec{Resources: []hook.Resource{{Name: "db", IncludedNamespaces: []string{"shop"}, LabelSelector: "app=db", PostHooks: []hook.Hook{
			{Init: &hook.Init{InitContainers: []map[string]any{{"name": "fetch", "image": "busybox", "command": []any{"fetch.sh"}}}}},
			{Exec: &hook.Exec{Container: "db", Command: []string{"psql", "-c", "select 1"}, OnError: hook.Fail, ExecTimeout: time.Minute,
				WaitTimeout: 5 * time.Minute, WaitForReady: true}},
		}}}},
	}, r.Selection)

	r, err = ReadRestore([]byte(`{"apiVersion":"velero.io/v1","kind":"Restore","metadata":{"name":"n"},
		"spec":{"scheduleName":"nightly","labelSelector":{"matchLabels":{"app":"web"}},"existingResourcePolicy":"none"}}`))
	require.NoError(t, err, "JSON as well")
	assert.Equal(t, "nightly", r.Schedule)
	assert.Equal(t, labels.SelectorFromSet(labels.Set{"app": "web"}).String(), r.Selection.Filter.Selector.String())
	assert.Equal(t, restore.Adopt, r.Selection.Existing, "Velero's none")
}

func TestReadRestoreRefusesWhatItDoesNotDo(t *testing.T) {
	head := "apiVersion: velero.io/v1\nkind: Restore\nmetadata: {name: r}\nspec:\n  backupName: b\n"
	for _, tc := range []struct{ spec, field, says string }{
		{"  hooks:\n    resources:\n    - {name: h, includedResources: [deployments]}\n", "spec.hooks.resources[0].includedResources", "Pods only"},
		{"  hooks:\n    resources:\n    - {name: h, postHooks: [{init: {initContainers: [{name: a}], timeout: 1m}}]}\n", "spec.hooks.resources[0].postHooks[0].init.timeout", "not supported"},
		{"  hooks:\n    resources:\n    - {name: h, postHooks: [{exec: {command: []}}]}\n", "spec.hooks", "exec.command: empty"},
		{"  itemOperationTimeout: -1h\n", "spec.itemOperationTimeout", "negative"},
		{"  resourcePolicy: {kind: configmap, name: p}\n", "spec.resourcePolicy", "not supported"},
		{"  uploaderConfig: {parallelFilesDownload: -1}\n", "spec.uploaderConfig.parallelFilesDownload", "negative"},
		{"  existingResourcePolicy: replace\n", "spec.existingResourcePolicy", `"replace"`},
		{"  existingResourcePolicy: adopt\n", "spec.existingResourcePolicy", "Velero's policies are none and update"},
		{"  resourceModifier: {kind: Secret, name: s}\n", "spec.resourceModifier", "from a ConfigMap"},
		{"  labelSelector: {matchLabels: {a: b}}\n  orLabelSelectors: [{matchLabels: {c: d}}]\n", "spec.orLabelSelectors", "one of them"},
		{"  scheduleName: s\n", "spec.backupName", "one of them"},
	} {
		_, err := ReadRestore([]byte(head + tc.spec))
		var fe *SpecFieldError
		require.ErrorAs(t, err, &fe, tc.spec)
		assert.Equal(t, tc.field, fe.Field)
		assert.Contains(t, fe.Reason, tc.says)
	}
	_, err := ReadRestore([]byte(head + "  includeNamespaces: [a]\n"))
	assert.ErrorContains(t, err, `unknown field "includeNamespaces"`, "a field Velero does not know: a typo, named")
	_, err = ReadRestore([]byte("apiVersion: velero.io/v1\nkind: Backup\nmetadata: {name: b}\n"))
	assert.ErrorContains(t, err, `kind "Backup"`)
}

// What SpecOf writes, ReadRestore reads back as the same selection.
func TestSpecOfIsReadBack(t *testing.T) {
	r, err := ReadRestore([]byte(fullRestore))
	require.NoError(t, err)
	spec, err := SpecOf(*r)
	require.NoError(t, err)
	spec["backupName"] = "shop-and-fleet"
	data, err := json.Marshal(map[string]any{"apiVersion": "velero.io/v1", "kind": "Restore", "metadata": map[string]any{"name": "shop-copy", "namespace": "velero"}, "spec": spec})
	require.NoError(t, err)
	back, err := ReadRestore(data)
	require.NoError(t, err)
	assert.Equal(t, filter.OrString(r.Selection.Filter.OrSelectors), filter.OrString(back.Selection.Filter.OrSelectors))
	r.Selection.Filter.OrSelectors, back.Selection.Filter.OrSelectors = nil, nil
	assert.Equal(t, r, back)
}

// A label selector goes into Velero's spec as it selects, != as NotIn; one with > or <,
// which Velero's LabelSelector cannot say, is an error.
func TestSpecOfSaysEverySelector(t *testing.T) {
	for sel, want := range map[string]*metav1.LabelSelector{
		"app=web,tier!=db": {MatchLabels: map[string]string{"app": "web"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"db"}}}},
		"env in (a,b),!legacy": {MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}, {Key: "legacy", Operator: metav1.LabelSelectorOpDoesNotExist}}},
	} {
		s, err := labels.Parse(sel)
		require.NoError(t, err)
		got, err := labelSelectorOf(s)
		require.NoError(t, err, sel)
		assert.Equal(t, want, got, sel)
		back, err := metav1.LabelSelectorAsSelector(got)
		require.NoError(t, err)
		for _, set := range []labels.Set{{}, {"app": "web"}, {"app": "web", "tier": "db"}, {"app": "web", "tier": "cache"},
			{"env": "a"}, {"env": "c"}, {"env": "b", "legacy": "yes"}} {
			assert.Equal(t, s.Matches(set), back.Matches(set), "%s and %s on %v", sel, back, set)
		}
	}
	gt, err := labels.Parse("replicas>2")
	require.NoError(t, err)
	_, err = labelSelectorOf(gt)
	assert.ErrorContains(t, err, "cannot be said")
}
