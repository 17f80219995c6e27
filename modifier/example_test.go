package modifier_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/restoregraph/restoregraph/modifier"
)

// Velero's resource modifiers, as a user keeps them in a ConfigMap: a rule that scales
// the Deployments of one namespace down to one replica as they are restored.
func ExampleParse() {
	m, err := modifier.Parse([]byte(`
version: v1
resourceModifierRules:
- conditions:
    groupResource: deployments.apps
    namespaces: [shop]
  patches:
  - {operation: replace, path: /spec/replicas, value: "1"}
`))
	if err != nil {
		panic(err)
	}
	web := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop"}, "spec": map[string]any{"replicas": int64(5)}}}
	applied, err := m.Apply(web, schema.GroupResource{Group: "apps", Resource: "deployments"}, "shop", "web")
	if err != nil {
		panic(err)
	}
	replicas, _, _ := unstructured.NestedInt64(web.Object, "spec", "replicas")
	fmt.Println("rules applied:", applied, "replicas:", replicas)
	// Output: rules applied: [0] replicas: 1
}
