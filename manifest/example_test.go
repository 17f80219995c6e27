package manifest_test

import (
	"bytes"
	"fmt"

	"github.com/restoregraph/restoregraph/manifest"
	"k8s.io/apimachinery/pkg/types"
)

func Example() {
	backup := manifest.New(0)
	backup.Add(&manifest.Item{Type: &manifest.Type{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments"}, Namespace: "shop", Name: "web", UID: "u1"})
	backup.Add(&manifest.Item{Type: &manifest.Type{Version: "v1", Kind: "ConfigMap", Resource: "configmaps"}, Namespace: "shop", Name: "web-config", UID: "u2", OwnerUIDs: []types.UID{"u1"}})

	// A restore of the same deployment, backed up at an older version, touches the same object.
	restore := manifest.New(0)
	restore.Add(&manifest.Item{Type: &manifest.Type{Group: "apps", Version: "v1beta2", Kind: "Deployment", Resource: "deployments"}, Namespace: "shop", Name: "web", UID: "x9"})

	for _, id := range manifest.Intersect(backup, restore).IDs() {
		fmt.Println("shared:", id)
	}
	_, err := backup.Add(&manifest.Item{Type: &manifest.Type{Version: "v1", Kind: "ConfigMap", Resource: "configmaps"}, Namespace: "shop", Name: "web-config", UID: "u3"})
	fmt.Println(err != nil)

	var buf bytes.Buffer
	manifest.Encode(&buf, backup)
	decoded, _ := manifest.Decode(&buf)
	fmt.Println(decoded.Len(), "items")
	// Output:
	// shared: deployments.apps/shop/web
	// true
	// 2 items
}

func ExampleSortVersions() {
	v := []string{"v1beta1", "v1", "v2alpha1", "v1alpha1", "v2", "v1"}
	fmt.Println(manifest.SortVersions(v))
	// Output: [v2 v1 v1beta1 v2alpha1 v1alpha1]
}
