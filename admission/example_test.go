package admission_test

import (
	"context"
	"fmt"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/manifest"
)

// Two restores that write the same Deployment run one after the other; a backup that
// reads something else runs beside them.
func ExampleLocal() {
	web := manifest.ID{Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web"}
	db := manifest.ID{Group: "apps", Resource: "statefulsets", Namespace: "shop", Name: "db"}
	var adm admission.Local
	ctx := context.Background()

	release, err := adm.Admit(ctx, admission.Operation{ID: "first", Kind: "restore", Writes: manifest.NewSet(web)})
	if err != nil {
		panic(err)
	}
	conflicts, _ := adm.Conflicts(ctx, admission.Operation{ID: "second", Kind: "restore", Writes: manifest.NewSet(web)})
	fmt.Println("second waits for:", conflicts[0].Kind, conflicts[0].ID)
	conflicts, _ = adm.Conflicts(ctx, admission.Operation{ID: "nightly", Kind: "backup", Reads: manifest.NewSet(db)})
	fmt.Println("the backup waits for:", len(conflicts), "operations")
	release()
	conflicts, _ = adm.Conflicts(ctx, admission.Operation{ID: "second", Kind: "restore", Writes: manifest.NewSet(web)})
	fmt.Println("once the first is released, second waits for:", len(conflicts), "operations")
	// Output:
	// second waits for: restore first
	// the backup waits for: 0 operations
	// once the first is released, second waits for: 0 operations
}
