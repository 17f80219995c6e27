package hook_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/restoregraph/restoregraph/hook"
)

// A Pod's exec hook from its annotations, as Velero reads them: the command runs in
// the named container once the Pod is restored and the container is up.
func ExampleSpec_Execs() {
	pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "db-0", "namespace": "shop", "annotations": map[string]any{
			"post.hook.restore.velero.io/container": "postgres",
			"post.hook.restore.velero.io/command":   `["/bin/sh", "-c", "pg_ctl promote"]`,
			"post.hook.restore.velero.io/on-error":  "Fail",
		}},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "postgres", "image": "postgres:17"}}}}}
	var spec hook.Spec // no spec.hooks: the annotations apply
	execs, err := spec.Execs(pod, "shop")
	if err != nil {
		panic(err)
	}
	for _, e := range execs {
		fmt.Printf("%s: %q in %s, on error %s\n", e.Source, e.Hook.Command, e.Hook.Container, e.Hook.OnError)
	}
	// Output: <annotations>: ["/bin/sh" "-c" "pg_ctl promote"] in postgres, on error Fail
}
