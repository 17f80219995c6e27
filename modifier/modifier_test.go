package modifier

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

var (
	deployments = schema.GroupResource{Group: "apps", Resource: "deployments"}
	pvcs        = schema.GroupResource{Resource: "persistentvolumeclaims"}
	clusters    = schema.GroupResource{Group: "cluster.x-k8s.io", Resource: "clusters"}
)

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	data, err := yaml.YAMLToJSON([]byte(y))
	require.NoError(t, err)
	require.NoError(t, u.UnmarshalJSON(data))
	return u
}

const web = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web, tier: front}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: web
        image: registry.example.com/web:1.2
      - name: sidecar
        image: registry.example.com/proxy:2
`

func parse(t *testing.T, y string) *Modifiers {
	t.Helper()
	m, err := Parse([]byte(y))
	require.NoError(t, err)
	return m
}

func TestEachPatchKindChangesWhatItSays(t *testing.T) {
	for _, tc := range []struct {
		name, rules string
		field       []string
		want        any
	}{
		{"json patch, a number", `
version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps}
  patches:
  - {operation: replace, path: /spec/replicas, value: "1"}
`, []string{"spec", "replicas"}, int64(1)},
		{"json patch, a quoted number is a string", `
version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps}
  patches:
  - {operation: add, path: /metadata/annotations, value: '{"restored-by": "dr"}'}
  - {operation: add, path: /metadata/annotations/tier, value: '"1"'}
`, []string{"metadata", "annotations"}, map[string]any{"restored-by": "dr", "tier": "1"}},
		{"json merge patch, in YAML", `
version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps}
  mergePatches:
  - patchData: |
      metadata:
        labels:
          tier: null
          restored: "yes"
`, []string{"metadata", "labels"}, map[string]any{"app": "web", "restored": "yes"}},
		{"strategic merge patch: a container by its name", `
version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps}
  strategicPatches:
  - patchData: |
      {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "mirror.example.org/web:1.2"}]}}}}
`, []string{"spec", "template", "spec", "containers"}, []any{
			map[string]any{"name": "web", "image": "mirror.example.org/web:1.2"},
			map[string]any{"name": "sidecar", "image": "registry.example.com/proxy:2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, web)
			applied, err := parse(t, tc.rules).Apply(obj, deployments, "shop", "web")
			require.NoError(t, err)
			assert.Equal(t, []int{0}, applied)
			got, _, _ := unstructured.NestedFieldNoCopy(obj.Object, tc.field...)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestEachConditionSelects(t *testing.T) {
	const patch = `
  mergePatches:
  - patchData: '{"metadata": {"annotations": {"hit": "yes"}}}'`
	for _, tc := range []struct {
		name, conditions string
		hit              bool
	}{
		{"group-resource", `{groupResource: deployments.apps}`, true},
		{"group-resource glob within a part", `{groupResource: "*.apps"}`, true},
		{"another group-resource", `{groupResource: statefulsets.apps}`, false},
		{"a glob does not cross a dot", `{groupResource: "deployments"}`, false},
		{"* is one part: the core group's resources", `{groupResource: "*"}`, false},
		{"** crosses dots", `{groupResource: "**"}`, true},
		{"namespace", `{groupResource: "*.apps", namespaces: [shop]}`, true},
		{"namespace glob", `{groupResource: "*.apps", namespaces: ["sh*"]}`, true},
		{"another namespace", `{groupResource: "*.apps", namespaces: [bank]}`, false},
		{"name regex, unanchored", `{groupResource: "*.apps", resourceNameRegex: "e"}`, true},
		{"name regex, anchored", `{groupResource: "*.apps", resourceNameRegex: "^e"}`, false},
		{"label selector", `{groupResource: "*.apps", labelSelector: {matchLabels: {app: web}}}`, true},
		{"label selector, expression", `{groupResource: "*.apps", labelSelector: {matchExpressions: [{key: tier, operator: NotIn, values: [front]}]}}`, false},
		{"matches a field", `{groupResource: "*.apps", matches: [{path: /spec/replicas, value: "3"}]}`, true},
		{"matches a string field", `{groupResource: "*.apps", matches: [{path: /spec/template/spec/containers/0/image, value: registry.example.com/web:1.2}]}`, true},
		{"matches another value", `{groupResource: "*.apps", matches: [{path: /spec/replicas, value: "2"}]}`, false},
		{"matches a field that is not there", `{groupResource: "*.apps", matches: [{path: /spec/paused, value: "true"}]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := parse(t, "version: v1\nresourceModifierRules:\n- conditions: "+tc.conditions+patch)
			obj := object(t, web)
			applied, err := m.Apply(obj, deployments, "shop", "web")
			require.NoError(t, err)
			assert.Equal(t, tc.hit, obj.GetAnnotations()["hit"] == "yes")
			assert.Equal(t, tc.hit, len(applied) == 1)
			cands := m.Candidates(Identity{GroupResource: deployments, Namespace: "shop", Name: "web", Labels: labels.Set(obj.GetLabels())})
			if tc.hit {
				require.Len(t, cands, 1, "the plan shows a rule that applies")
			}
		})
	}
}

func TestClusterScopedObjectsAreNotHeldToNamespaces(t *testing.T) {
	m := parse(t, `
version: v1
resourceModifierRules:
- conditions: {groupResource: persistentvolumes, namespaces: [shop]}
  mergePatches: [{patchData: '{"spec": {"storageClassName": "fast"}}'}]
`)
	pv := object(t, "{apiVersion: v1, kind: PersistentVolume, metadata: {name: pv-1}, spec: {storageClassName: slow}}")
	applied, err := m.Apply(pv, schema.GroupResource{Resource: "persistentvolumes"}, "", "pv-1")
	require.NoError(t, err)
	assert.Equal(t, []int{0}, applied)
	assert.Equal(t, "fast", pv.Object["spec"].(map[string]any)["storageClassName"])
}

func TestRulesAreJudgedOnTheObjectAsItCame(t *testing.T) {
	// The second rule matches replicas 3: the first rule has made them 1 by then, but
	// conditions are judged on the object before any rule changed it, as Velero does.
	m := parse(t, `
version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps}
  patches: [{operation: replace, path: /spec/replicas, value: "1"}]
- conditions: {groupResource: deployments.apps, matches: [{path: /spec/replicas, value: "3"}]}
  patches: [{operation: add, path: /spec/paused, value: "true"}]
- conditions: {groupResource: deployments.apps, labelSelector: {matchLabels: {tier: back}}}
  patches: [{operation: remove, path: /spec}]
`)
	obj := object(t, web)
	applied, err := m.Apply(obj, deployments, "shop", "web")
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1}, applied)
	assert.Equal(t, int64(1), obj.Object["spec"].(map[string]any)["replicas"])
	assert.Equal(t, true, obj.Object["spec"].(map[string]any)["paused"])
	assert.Equal(t, []Candidate{{Rule: 0}, {Rule: 1, Conditional: true}},
		m.Candidates(Identity{GroupResource: deployments, Namespace: "shop", Name: "web", Labels: labels.Set(obj.GetLabels())}))
}

func TestAFailedTestOperationLeavesTheObject(t *testing.T) {
	m := parse(t, `
version: v1
resourceModifierRules:
- conditions: {groupResource: persistentvolumeclaims}
  patches:
  - {operation: test, path: /spec/storageClassName, value: premium}
  - {operation: replace, path: /spec/storageClassName, value: standard}
`)
	pvc := object(t, "{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data, namespace: shop}, spec: {storageClassName: gold}}")
	applied, err := m.Apply(pvc, pvcs, "shop", "data")
	require.NoError(t, err, "a test that fails is no error")
	assert.Empty(t, applied)
	assert.Equal(t, "gold", pvc.Object["spec"].(map[string]any)["storageClassName"])

	pvc.Object["spec"].(map[string]any)["storageClassName"] = "premium"
	applied, err = m.Apply(pvc, pvcs, "shop", "data")
	require.NoError(t, err)
	assert.Equal(t, []int{0}, applied)
	assert.Equal(t, "standard", pvc.Object["spec"].(map[string]any)["storageClassName"])
}

func TestARuleThatFailsOnAnObjectIsNamed(t *testing.T) {
	m := parse(t, `
version: v1
resourceModifierRules:
- conditions: {groupResource: "**"}
  mergePatches: [{patchData: '{"metadata": {"annotations": {"seen": "yes"}}}'}]
- conditions: {groupResource: "*.cluster.x-k8s.io"}
  strategicPatches: [{patchData: '{"spec": {"paused": true}}'}]
- conditions: {groupResource: deployments.apps}
  patches: [{operation: remove, path: /spec/notThere}]
`)
	c := object(t, "{apiVersion: cluster.x-k8s.io/v1beta1, kind: Cluster, metadata: {name: w, namespace: fleet}, spec: {}}")
	applied, err := m.Apply(c, clusters, "fleet", "w")
	var re *RuleError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, 1, re.Rule)
	assert.ErrorContains(t, err, "resourceModifierRules[1]: strategicPatches: cluster.x-k8s.io/v1beta1, Kind=Cluster is not a built-in kind")
	assert.Equal(t, []int{0}, applied, "what applied before the failure is said")

	_, err = m.Apply(object(t, web), deployments, "shop", "web")
	require.ErrorAs(t, err, &re)
	assert.Equal(t, 2, re.Rule)
	assert.ErrorContains(t, err, "patches:")
}

func TestParseRefusesWhatItCannotApply(t *testing.T) {
	for _, tc := range []struct{ name, rules, err string }{
		{"unknown field", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: pods, namespace: [a]}\n  patches: [{operation: remove, path: /a}]", `unknown field "namespace"`},
		{"version", "version: v2\nresourceModifierRules: []", `version "v2": only "v1" is defined`},
		{"no rule", "version: v1\nresourceModifierRules: []", "no rule"},
		{"no group-resource", "version: v1\nresourceModifierRules:\n- conditions: {}\n  patches: [{operation: remove, path: /a}]", "resourceModifierRules[0].conditions.groupResource: empty"},
		{"no patch", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: pods}", "resourceModifierRules[0].patches: no patch"},
		{"two kinds", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: pods}\n  patches: [{operation: remove, path: /a}]\n  mergePatches: [{patchData: '{}'}]", "only one of patches"},
		{"operation", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: pods}\n  patches: [{operation: delete, path: /a}]", `resourceModifierRules[0].patches[0].operation: "delete" is not`},
		{"path", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: pods}\n  patches: [{operation: remove}]", "resourceModifierRules[0].patches[0].path: empty"},
		{"value", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: pods}\n  patches: [{operation: add, path: /a, value: '{broken'}]", "resourceModifierRules[0].patches[0].value:"},
		{"regex", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: pods, resourceNameRegex: '('}\n  patches: [{operation: remove, path: /a}]", "resourceModifierRules[0].conditions.resourceNameRegex:"},
		{"glob", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: 'pods[', }\n  patches: [{operation: remove, path: /a}]", "resourceModifierRules[0].conditions.groupResource:"},
		{"selector", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: pods, labelSelector: {matchExpressions: [{key: a, operator: Near}]}}\n  patches: [{operation: remove, path: /a}]", "resourceModifierRules[0].conditions.labelSelector:"},
		{"match path", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: pods, matches: [{value: a}]}\n  patches: [{operation: remove, path: /a}]", "resourceModifierRules[0].conditions.matches[0].path: empty"},
		{"merge patch", "version: v1\nresourceModifierRules:\n- conditions: {groupResource: pods}\n  mergePatches: [{patchData: '[1]'}]", "resourceModifierRules[0].mergePatches[0].patchData: not an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.rules))
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.err)
			var re *RuleError
			if errors.As(err, &re) {
				assert.Contains(t, re.Error(), re.Field)
			}
		})
	}
}

func TestValueIsReadAsVeleroReadsIt(t *testing.T) {
	for in, want := range map[string]string{
		"":             `""`,
		`"3"`:          `"3"`,
		"3":            `3`,
		"-1.5e3":       `-1.5e3`,
		"null":         `null`,
		"True":         `true`,
		"premium":      `"premium"`,
		`{"a": 1}`:     `{"a": 1}`,
		`[1, "b"]`:     `[1, "b"]`,
		"a \"quoted\"": `"a \"quoted\""`,
	} {
		got, err := Value(in)
		require.NoError(t, err, in)
		assert.JSONEq(t, want, string(got), in)
	}
	_, err := Value("Inf")
	assert.ErrorContains(t, err, "quote it", "Inf parses as a float but is no JSON")
}

func TestSavedAsGivenAndReadBack(t *testing.T) {
	m := parse(t, `
version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps, namespaces: [shop]}
  patches: [{operation: replace, path: /spec/replicas, value: "1"}]
`)
	data, err := m.MarshalJSON()
	require.NoError(t, err)
	var back Modifiers
	require.NoError(t, back.UnmarshalJSON(data))
	assert.Equal(t, m.Spec(), back.Spec())
	obj := object(t, web)
	_, err = back.Apply(obj, deployments, "shop", "web")
	require.NoError(t, err)
	assert.Equal(t, int64(1), obj.Object["spec"].(map[string]any)["replicas"], "the rules read back are compiled")
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(web))
	f.Add([]byte("version: v1\nresourceModifierRules:\n- conditions: {groupResource: '*', matches: [{path: /a, value: '1'}]}\n  patches: [{operation: add, path: /a, value: '[1]'}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			return
		}
		obj := object(t, web)
		_, _ = m.Apply(obj, deployments, "shop", "web") // never panics
	})
}

// RulesFor names the rules that may change objects of a group-resource, by their
// groupResource alone, whatever their other conditions. A wildcard matches as it does
// when the rules are applied: "*" within one dot-separated part, "**" across them.
func TestRulesForNamesTheRulesThatMayChangeAResource(t *testing.T) {
	m := parse(t, `
version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps, namespaces: [shop]}
  patches: [{operation: replace, path: /spec/replicas, value: "1"}]
- conditions: {groupResource: "*.rbac.authorization.k8s.io", resourceNameRegex: "^admin"}
  mergePatches: [{patchData: "{metadata: {labels: {a: b}}}"}]
- conditions: {groupResource: "**"}
  mergePatches: [{patchData: "{metadata: {labels: {a: b}}}"}]
- conditions: {groupResource: "*"}
  mergePatches: [{patchData: "{metadata: {labels: {a: b}}}"}]
`)
	assert.Equal(t, []int{0, 2}, m.RulesFor(deployments))
	assert.Equal(t, []int{1, 2}, m.RulesFor(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}))
	assert.Equal(t, []int{2, 3}, m.RulesFor(pvcs))
}
