package readiness_test

import (
	"fmt"

	"github.com/restoregraph/restoregraph/readiness"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func Example() {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.x.io"},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "NamesAccepted", "status": "True"},
			map[string]any{"type": "Established", "status": "False"},
		}},
	}}
	widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "x.io/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}}}

	reg := readiness.NewRegistry(readiness.RequireSignal)
	for _, obj := range []*unstructured.Unstructured{crd, widget} {
		r := reg.Check(obj)
		fmt.Printf("%s ready=%v probe=%s policy=%q\n", obj.GetKind(), r.Ready, r.Probe, r.Policy)
	}
	// Output:
	// CustomResourceDefinition ready=false probe=CustomResourceDefinition policy=""
	// Widget ready=false probe=ReadyCondition policy="RequireSignal"
}
