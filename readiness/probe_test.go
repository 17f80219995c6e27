package readiness

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(apiVersion, kind string, fields map[string]any) *unstructured.Unstructured {
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": "x", "namespace": "n", "generation": int64(1)}}
	for k, v := range fields {
		o[k] = v
	}
	return &unstructured.Unstructured{Object: o}
}

func conds(pairs ...string) map[string]any {
	var cs []any
	for i := 0; i < len(pairs); i += 2 {
		cs = append(cs, map[string]any{"type": pairs[i], "status": pairs[i+1]})
	}
	return map[string]any{"conditions": cs}
}

func TestProbes(t *testing.T) {
	crd := func(c map[string]any) *unstructured.Unstructured {
		return obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", map[string]any{"status": c})
	}
	deploy := func(status map[string]any) *unstructured.Unstructured {
		return obj("apps/v1", "Deployment", map[string]any{"spec": map[string]any{"replicas": int64(2)}, "status": status})
	}
	tests := []struct {
		name          string
		probe         Probe
		obj           *unstructured.Unstructured
		ready, failed bool
	}{
		{"CRD without conditions", CRD, crd(map[string]any{}), false, false},
		{"CRD names accepted, not established", CRD, crd(conds("NamesAccepted", "True", "Established", "False")), false, false},
		{"CRD established", CRD, crd(conds("NamesAccepted", "True", "Established", "True")), true, false},
		{"Namespace active", Namespace, obj("v1", "Namespace", map[string]any{"status": map[string]any{"phase": "Active"}}), true, false},
		{"Namespace terminating", Namespace, obj("v1", "Namespace", map[string]any{"status": map[string]any{"phase": "Terminating"}}), false, true},
		{"Namespace without status", Namespace, obj("v1", "Namespace", nil), false, false},
		{"Deployment not observed yet", KStatus, deploy(map[string]any{"observedGeneration": int64(0)}), false, false},
		{"Deployment rolling out", KStatus, deploy(map[string]any{"observedGeneration": int64(1), "replicas": int64(2), "updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1)}), false, false},
		{"Deployment available", KStatus, deploy(map[string]any{"observedGeneration": int64(1), "replicas": int64(2), "updatedReplicas": int64(2), "readyReplicas": int64(2), "availableReplicas": int64(2),
			"conditions": []any{map[string]any{"type": "Available", "status": "True"}}}), true, false},
		{"Deployment past its progress deadline", KStatus, deploy(map[string]any{"observedGeneration": int64(1), "replicas": int64(2),
			"conditions": []any{map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}}}), false, true},
		{"Pod pending", KStatus, obj("v1", "Pod", map[string]any{"status": map[string]any{"phase": "Pending"}}), false, false},
		// kstatus counts a Pod in a terminal phase as Current: it has settled.
		{"Pod completed unsuccessfully", KStatus, obj("v1", "Pod", map[string]any{"status": map[string]any{"phase": "Failed"}}), true, false},
		{"Ready condition missing", ReadyCondition, obj("x.io/v1", "Widget", nil), false, false},
		{"Ready condition false", ReadyCondition, obj("x.io/v1", "Widget", map[string]any{"status": conds("Ready", "False")}), false, false},
		{"Ready condition true", ReadyCondition, obj("x.io/v1", "Widget", map[string]any{"status": conds("Ready", "True")}), true, false},
		{"exists", Exists, obj("v1", "ConfigMap", nil), true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.probe.Probe(tc.obj)
			assert.Equal(t, tc.ready, r.Ready, r.Reason)
			assert.Equal(t, tc.failed, r.Failed, r.Reason)
			assert.NotEmpty(t, r.Probe)
			assert.NotEmpty(t, r.Reason)
		})
	}
}

func TestRegistryPolicy(t *testing.T) {
	widget := obj("x.io/v1", "Widget", nil)
	r := NewRegistry("")
	res := r.Check(widget)
	assert.True(t, res.Ready)
	assert.Equal(t, ReadyOnCreate, res.Policy, "the policy that decided is visible")
	assert.Contains(t, res.Reason, "no probe for Widget.x.io")

	r = NewRegistry(RequireSignal)
	res = r.Check(widget)
	assert.False(t, res.Ready)
	assert.Equal(t, RequireSignal, res.Policy)
	assert.True(t, r.Check(obj("x.io/v1", "Widget", map[string]any{"status": conds("Ready", "True")})).Ready)

	res = r.Check(obj("v1", "ConfigMap", nil))
	assert.True(t, res.Ready)
	assert.Empty(t, res.Policy, "a known kind is judged by its own probe")
	assert.True(t, r.Known(widget.GroupVersionKind().GroupKind()) == false)
}
