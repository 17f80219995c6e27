package versionselect_test

import (
	"fmt"

	"github.com/restoregraph/restoregraph/versionselect"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A backup taken where HPAs were preferred at autoscaling/v2beta2 is restored into a
// cluster that serves only v2 and v1.
func ExampleChoose() {
	gr := schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}
	source := versionselect.Versions{Versions: []string{"v2beta2", "v1"}, Preferred: "v2beta2"}
	target := versionselect.Versions{Versions: []string{"v2", "v1"}, Preferred: "v2"}

	c := versionselect.Choose(gr, source, target, nil)
	fmt.Println(c.Version, c.Rule)
	fmt.Println(c.Explain())

	c = versionselect.Choose(gr, source, target, []string{"v2beta2", "v1"})
	fmt.Println(c.Version, c.Rule)
	// Output:
	// v1 CommonVersion
	// v1: the highest-priority version both sides support
	// v1 UserPriority
}
