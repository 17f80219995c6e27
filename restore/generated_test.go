package restore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

func parse(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// An update of a Job that exists keeps the selector and labels the target generated,
// which the restore leaves out of what it creates; what the body sets is its own.
func TestKeepGenerated(t *testing.T) {
	live := parse(t, `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  selector: {matchLabels: {batch.kubernetes.io/controller-uid: u-live}}
  template:
    metadata: {labels: {batch.kubernetes.io/controller-uid: u-live, controller-uid: u-live, job-name: migrate}}
`)
	body := parse(t, `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    metadata: {labels: {job-name: migrate, team: a}}
`)
	keepGenerated(schema.GroupResource{Group: "batch", Resource: "jobs"}, body, live)
	sel, _, _ := unstructured.NestedStringMap(body.Object, "spec", "selector", "matchLabels")
	assert.Equal(t, map[string]string{"batch.kubernetes.io/controller-uid": "u-live"}, sel)
	labels, _, _ := unstructured.NestedStringMap(body.Object, "spec", "template", "metadata", "labels")
	assert.Equal(t, map[string]string{"batch.kubernetes.io/controller-uid": "u-live", "controller-uid": "u-live", "job-name": "migrate", "team": "a"}, labels)

	cm := parse(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {k: v}}`)
	keepGenerated(schema.GroupResource{Resource: "configmaps"}, cm, parse(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {k: old, x: y}}`))
	assert.Equal(t, map[string]any{"k": "v"}, cm.Object["data"], "nothing else is carried over")
}
