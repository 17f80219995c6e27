package archive_test

import (
	"bytes"
	"fmt"

	"github.com/restoregraph/restoregraph/archive"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func Example() {
	var buf bytes.Buffer
	w, _ := archive.NewWriter(&buf, archive.Format11)
	hpa := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "uid": "u1"},
	}}
	w.Add(hpa, "horizontalpodautoscalers", true)
	old := hpa.DeepCopy()
	old.SetAPIVersion("autoscaling/v1")
	w.Add(old, "horizontalpodautoscalers", false)
	w.Close()

	backup, err := archive.Read(&buf, archive.Options{})
	if err != nil {
		panic(err)
	}
	gr := schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}
	res, _ := backup.Resource(gr)
	fmt.Println("versions:", res.Versions, "preferred:", res.Preferred)
	for it := range backup.Manifest().All() {
		fmt.Println(it)
	}
	fmt.Println("v1 lies in", backup.Dir(gr, "v1"), "and v2 in", backup.Dir(gr, "v2"))
	// Output:
	// versions: [v2 v1] preferred: v2
	// HorizontalPodAutoscaler.autoscaling shop/web
	// v1 lies in v1 and v2 in v2-preferredversion
}
