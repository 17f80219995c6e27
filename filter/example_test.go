package filter_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/restoregraph/restoregraph/filter"
)

// Resource names as kubectl takes them, resolved against what a cluster serves: a
// selection of the shop namespace's Deployments and Services, whatever their names
// were written as.
func ExampleSpec_Resolve() {
	catalog := filter.Catalog{
		{GroupResource: schema.GroupResource{Group: "apps", Resource: "deployments"}, Kind: "Deployment", Singular: "deployment", ShortNames: []string{"deploy"}},
		{GroupResource: schema.GroupResource{Resource: "services"}, Kind: "Service", Singular: "service", ShortNames: []string{"svc"}},
		{GroupResource: schema.GroupResource{Resource: "secrets"}, Kind: "Secret", Singular: "secret"},
	}
	f, err := filter.Spec{IncludeNamespaces: []string{"shop"}, IncludeResources: []string{"deploy", "Service"}}.Resolve(catalog)
	if err != nil {
		panic(err)
	}
	for _, gr := range []schema.GroupResource{{Group: "apps", Resource: "deployments"}, {Resource: "services"}, {Resource: "secrets"}} {
		fmt.Printf("%s: %t\n", gr, f.Resource(gr))
	}
	fmt.Println("namespace shop:", f.Namespace("shop"), "kube-system:", f.Namespace("kube-system"))
	// Output:
	// deployments.apps: true
	// services: true
	// secrets: false
	// namespace shop: true kube-system: false
}
