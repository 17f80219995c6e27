package plugin_test

import (
	"fmt"

	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// stripNodeName is an old, v1 plugin: Pods must not be pinned to the source's nodes.
type stripNodeName struct{}

func (stripNodeName) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{"pods"}}, nil
}

func (stripNodeName) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	pod := in.Item.DeepCopy()
	unstructured.RemoveNestedField(pod.Object, "spec", "nodeName")
	return ria.NewExecuteOutput(pod), nil
}

func Example() {
	var reg plugin.Registry
	reg.Register("strip-node-name", plugin.V1, stripNodeName{})

	action, _ := reg.Lookup("strip-node-name") // always the newest interface, v2
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"},
		"spec": map[string]any{"nodeName": "source-node-7"},
	}}
	out, _ := action.Execute(&ria.ExecuteInput{Item: pod, ItemFromBackup: pod})
	_, pinned, _ := unstructured.NestedString(out.UpdatedItem.Object, "spec", "nodeName")
	ready, _ := action.AreAdditionalItemsReady(nil, nil)
	fmt.Println("still pinned:", pinned, "- additional items ready:", ready)
	// Output: still pinned: false - additional items ready: true
}
