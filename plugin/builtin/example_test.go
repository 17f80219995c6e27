package builtin_test

import (
	"fmt"

	"github.com/restoregraph/restoregraph/plugin"
	"github.com/restoregraph/restoregraph/plugin/builtin"
)

// The built-in actions, registered as any plugin is, but one a restore was asked to
// leave out.
func ExampleRegister() {
	var reg plugin.Registry
	if err := builtin.Register(&reg, builtin.Options{}, builtin.Job); err != nil {
		panic(err)
	}
	actions, err := reg.Actions()
	if err != nil {
		panic(err)
	}
	for _, a := range actions {
		fmt.Println(a.Name, a.Version, a.Selector.IncludedResources)
	}
	// Output:
	// restoregraph.dev/service v1 [services]
	// restoregraph.dev/pod v1 [pods]
	// restoregraph.dev/persistentvolumeclaim v1 [persistentvolumeclaims]
	// restoregraph.dev/persistentvolume v1 [persistentvolumes]
}
