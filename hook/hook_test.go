package hook

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func pod(name string, labels, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "shop"},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "db", "image": "postgres:17"}, map[string]any{"name": "side", "image": "s"}}}}}
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

var spec = &Spec{Resources: []Resource{
	{Name: "db-hooks", IncludedNamespaces: []string{"shop-dr"}, LabelSelector: "app=db", PostHooks: []Hook{
		{Init: &Init{InitContainers: []map[string]any{{"name": "restore-data", "image": "busybox"}}}},
		{Exec: &Exec{Command: []string{"psql", "-c", "select 1"}, OnError: Fail, WaitForReady: true}},
	}},
	{Name: "elsewhere", ExcludedNamespaces: []string{"shop-dr"}, PostHooks: []Hook{{Exec: &Exec{Container: "side", Command: []string{"true"}}}}},
}}

// A Pod's annotations give its hooks of a kind, and then the spec's do not apply; the
// spec's apply by the namespace the Pod is restored into and by its labels.
func TestHooksFromAnnotationsOrSpec(t *testing.T) {
	db := pod("db-0", map[string]string{"app": "db"}, nil)
	inits := spec.InitContainers(db, "shop-dr")
	require.Len(t, inits, 1)
	assert.Equal(t, Named[map[string]any]{"db-hooks", map[string]any{"name": "restore-data", "image": "busybox"}}, inits[0])
	execs, err := spec.Execs(db, "shop-dr")
	require.NoError(t, err)
	assert.Equal(t, []Named[Exec]{{"db-hooks", Exec{Container: "db", Command: []string{"psql", "-c", "select 1"}, OnError: Fail, WaitForReady: true}}}, execs,
		"the first container when the hook names none")

	execs, err = spec.Execs(db, "shop")
	require.NoError(t, err)
	assert.Equal(t, []Named[Exec]{{"elsewhere", Exec{Container: "side", Command: []string{"true"}}}}, execs, "judged by the namespace it is restored into")
	assert.Empty(t, spec.InitContainers(pod("web", map[string]string{"app": "web"}, nil), "shop-dr"), "labels select")

	annotated := pod("db-1", map[string]string{"app": "db"}, map[string]string{
		ExecCommandAnnotation: `["/bin/sh", "-c", "pg_ctl promote"]`, ExecContainerAnnotation: "side", ExecOnErrorAnnotation: "Continue",
		ExecTimeoutAnnotation: "2m", ExecWaitTimeoutAnnotation: "10m", ExecWaitForReadyAnnotation: "true",
		InitImageAnnotation: "busybox:1.36", InitCommandAnnotation: "restore.sh"})
	execs, err = spec.Execs(annotated, "shop-dr")
	require.NoError(t, err)
	assert.Equal(t, []Named[Exec]{{"<annotations>", Exec{Container: "side", Command: []string{"/bin/sh", "-c", "pg_ctl promote"}, OnError: Continue,
		ExecTimeout: 2 * time.Minute, WaitTimeout: 10 * time.Minute, WaitForReady: true}}}, execs, "the annotations, and not the spec")
	assert.Equal(t, []Named[map[string]any]{{"<annotations>", map[string]any{"name": "restore-init-db-1", "image": "busybox:1.36", "command": []any{"restore.sh"}}}},
		spec.InitContainers(annotated, "shop-dr"), "a command that is no JSON array is one word, as Velero reads it")

	var none *Spec
	execs, err = none.Execs(annotated, "x")
	require.NoError(t, err)
	assert.Len(t, execs, 1, "annotations apply without a spec")

	for key, bad := range map[string]string{ExecOnErrorAnnotation: "Retry", ExecTimeoutAnnotation: "soon", ExecWaitForReadyAnnotation: "maybe"} {
		_, err := none.Execs(pod("p", nil, map[string]string{ExecCommandAnnotation: "true", key: bad}), "x")
		assert.ErrorContains(t, err, key, "a malformed annotation is named")
	}
}

func TestCheckNamesWhatCannotApply(t *testing.T) {
	require.NoError(t, spec.Check())
	for want, s := range map[string]Spec{
		"labelSelector":              {Resources: []Resource{{Name: "a", LabelSelector: "a in (b", PostHooks: nil}}},
		"one of exec and init":       {Resources: []Resource{{Name: "a", PostHooks: []Hook{{}}}}},
		"exec.command: empty":        {Resources: []Resource{{Name: "a", PostHooks: []Hook{{Exec: &Exec{}}}}}},
		"onError":                    {Resources: []Resource{{Name: "a", PostHooks: []Hook{{Exec: &Exec{Command: []string{"x"}, OnError: "Retry"}}}}}},
		"initContainers[0]: no name": {Resources: []Resource{{Name: "a", PostHooks: []Hook{{Init: &Init{InitContainers: []map[string]any{{"image": "x"}}}}}}}},
	} {
		assert.ErrorContains(t, s.Check(), want)
	}
}
