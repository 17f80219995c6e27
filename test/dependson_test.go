package test

import (
	"testing"

	"github.com/restoregraph/restoregraph/graph"
	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/cli-utils/pkg/object/dependson"
)

// The library parses config.kubernetes.io/depends-on itself: cli-utils' parser lives in
// a package that pulls in cli-runtime and kustomize. This test keeps the two in step:
// whatever graph accepts, cli-utils reads the same way; what cli-utils refuses, graph
// refuses too (graph refuses more: empty kinds, names and namespaces).
func TestDependsOnAgreesWithCLIUtils(t *testing.T) {
	for _, value := range []string{
		"apps/namespaces/shop/Deployment/web",
		"/namespaces/shop/ConfigMap/c, apps/namespaces/shop/Deployment/web",
		"rbac.authorization.k8s.io/ClusterRole/admin",
		"/Namespace/shop,/namespaces/shop/Secret/s",
		" apps/namespaces/shop/Deployment/web ",
		"", "a,,b", "apps/Deployment", "apps/ns/shop/Deployment/web", "apps/namespaces//Deployment/web",
		"apps//web", "a/b/c/d/e/f", "apps/Deployment/",
	} {
		ours, oursErr := graph.ParseDependsOn(value)
		theirs, theirsErr := dependson.ParseDependencySet(value)
		if theirsErr != nil {
			assert.Error(t, oursErr, "cli-utils refuses %q", value)
			continue
		}
		if oursErr != nil {
			continue // stricter: cli-utils would accept a reference no object can have
		}
		if assert.Len(t, ours, len(theirs), value) {
			for i := range ours {
				assert.Equal(t, theirs[i].GroupKind.Group, ours[i].Group, value)
				assert.Equal(t, theirs[i].GroupKind.Kind, ours[i].Kind, value)
				assert.Equal(t, theirs[i].Namespace, ours[i].Namespace, value)
				assert.Equal(t, theirs[i].Name, ours[i].Name, value)
			}
		}
	}
}
