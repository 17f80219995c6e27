package archive_test

import (
	"bytes"
	"context"
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

	backup, err := archive.Read(context.Background(), &buf, archive.Options{})
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

// A backup kept as Velero keeps it, in a bucket or a directory (here the one the real
// Velero server wrote into its bucket, copied to testdata), read by its key. A Source
// over any object store is a ranged read; a download that breaks is resumed from the
// byte it stopped at.
func ExampleOpen() {
	bucket := archive.DirSource("../testdata/velero")
	backup, err := archive.Open(context.Background(), bucket, "shop-and-fleet/shop-and-fleet.tar.gz", archive.Options{})
	if err != nil {
		panic(err)
	}
	defer backup.Close()
	st := backup.SourceStats()
	fmt.Println(backup.Manifest().Len(), "objects;", "read", st.Bytes == st.Size, "resumed", st.Resumed)
	fmt.Println("in Velero's layout, backup nightly under prefix velero is", archive.TarballKey("velero", "nightly"))
	// Output:
	// 102 objects; read true resumed 0
	// in Velero's layout, backup nightly under prefix velero is velero/backups/nightly/nightly.tar.gz
}
