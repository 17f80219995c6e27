package velero_test

import (
	"fmt"

	"github.com/restoregraph/restoregraph/velero"
)

// A Restore as `velero restore create -o yaml` writes it, read into what restoregraph
// restores: its backup, and the selection of the library's restore.Plan.
func ExampleReadRestore() {
	spec, err := velero.ReadRestore([]byte(`
apiVersion: velero.io/v1
kind: Restore
metadata:
  name: shop-copy
  namespace: velero
spec:
  backupName: nightly
  includedNamespaces: [shop]
  namespaceMapping: {shop: shop-copy}
  existingResourcePolicy: update
`))
	if err != nil {
		panic(err)
	}
	fmt.Println(spec.Name, "restores", spec.Backup)
	fmt.Println("namespaces:", spec.Selection.Filter.IncludeNamespaces, "mapped:", spec.Selection.NamespaceMappings)
	fmt.Println("existing objects:", spec.Selection.Existing)

	_, err = velero.ReadRestore([]byte(`
apiVersion: velero.io/v1
kind: Restore
metadata: {name: with-policy, namespace: velero}
spec:
  backupName: nightly
  resourcePolicy: {kind: configmap, name: volume-policy}
`))
	fmt.Println(err)
	// Output:
	// shop-copy restores nightly
	// namespaces: [shop] mapped: map[shop:shop-copy]
	// existing objects: update
	// spec.resourcePolicy: volume policies are not supported
}
