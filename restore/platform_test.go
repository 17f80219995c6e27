package restore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/memcluster"
)

// hookBackend is a webhook's backend: a Deployment whose Pods a Service picks, in
// namespace hooks.
func hookBackend() []map[string]any {
	return []map[string]any{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "hooks", "uid": "ns-hooks"}},
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "backend", "namespace": "hooks", "uid": "dep-backend"},
			"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "hook"}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "hook"}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "hook", "image": "hook:1"}}}}}},
		// Another workload of the namespace, which the Service does not pick.
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "other", "namespace": "hooks", "uid": "dep-other"},
			"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "other"}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "other"}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "other", "image": "other:1"}}}}}},
		{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "hook", "namespace": "hooks", "uid": "svc-hook"},
			"spec": map[string]any{"selector": map[string]any{"app": "hook"}, "ports": []any{map[string]any{"port": int64(443)}}}},
	}
}

// webhookConfig is a ValidatingWebhookConfiguration whose one webhook, failing closed,
// calls Service namespace/service on the creation of resources.
func webhookConfig(name, namespace, service string, resources ...string) map[string]any {
	res := make([]any, len(resources))
	for i, r := range resources {
		res[i] = r
	}
	return map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
		"metadata": map[string]any{"name": name, "uid": "vwc-" + name},
		"webhooks": []any{map[string]any{"name": name + ".example.io", "failurePolicy": "Fail", "sideEffects": "None",
			"admissionReviewVersions": []any{"v1"},
			"clientConfig":            map[string]any{"service": map[string]any{"namespace": namespace, "name": service}},
			"rules": []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"},
				"resources": res, "scope": "Namespaced"}},
			"objectSelector": map[string]any{"matchExpressions": []any{map[string]any{"key": "skip-webhook", "operator": "DoesNotExist"}}},
		}}}
}

// dependsOnOf returns what the plan's object of kind and name waits for, as "Kind/name
// (reason)", and its gate.
func dependsOnOf(t *testing.T, p *Plan, kind, name string) (deps []string, gate string) {
	t.Helper()
	for o := range p.Objects() {
		if o.Kind == kind && o.Name == name {
			for _, d := range o.DependsOn {
				ref, _ := p.Object(d.UID)
				deps = append(deps, ref.Kind+"/"+ref.Name+" ("+d.Reason+")")
			}
			return deps, o.Gate
		}
	}
	t.Fatalf("no %s/%s in the plan", kind, name)
	return nil, ""
}

// A webhook configuration is restored after what its webhooks intercept and after its
// Service and the workload behind it, which is waited for until Available; what its
// rules or selector leave alone, and the namespace's other workload, are not ordered.
func TestWebhookAfterWhatItInterceptsAndItsBackend(t *testing.T) {
	ctx := context.Background()
	objs := append(hookBackend(), webhookConfig("guard", "hooks", "hook", "configmaps"),
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "checked", "namespace": "hooks", "uid": "cm-checked"}},
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "unchecked", "namespace": "hooks", "uid": "cm-unchecked",
			"labels": map[string]any{"skip-webhook": "yes"}}},
		map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s", "namespace": "hooks", "uid": "secret-s"}})
	b := backupOf(t, objs...)
	_, tgt := cluster(t, memcluster.Options{})

	p, err := NewPlan(ctx, b, tgt, PlanOptions{})
	require.NoError(t, err)
	deps, _ := dependsOnOf(t, p, "ValidatingWebhookConfiguration", "guard")
	assert.ElementsMatch(t, []string{"ConfigMap/checked (admission-webhooks)", "Deployment/backend (admission-webhooks)", "Service/hook (admission-webhooks)"}, deps)
	_, gate := dependsOnOf(t, p, "Deployment", "backend")
	assert.Equal(t, "waits until Available: it serves webhook guard.example.io of ValidatingWebhookConfiguration.admissionregistration.k8s.io guard (Service hooks/hook)", gate)
	_, gate = dependsOnOf(t, p, "Deployment", "other")
	assert.Empty(t, gate)
	dot, err := p.DOT()
	require.NoError(t, err)
	assert.Contains(t, string(dot), "admission-webhooks")

	off, err := NewPlan(ctx, b, tgt, PlanOptions{Selection: Selection{Disabled: DisabledByName(AdmissionWebhooks)}})
	require.NoError(t, err)
	deps, _ = dependsOnOf(t, off, "ValidatingWebhookConfiguration", "guard")
	assert.Empty(t, deps)
	_, gate = dependsOnOf(t, off, "Deployment", "backend")
	assert.Empty(t, gate)
}

// The plan warns of a webhook failing closed whose Service the restore does not hold,
// and of one that intercepts its own backend's Pods.
func TestWebhookWarnings(t *testing.T) {
	ctx := context.Background()
	_, tgt := cluster(t, memcluster.Options{})
	b := backupOf(t, webhookConfig("elsewhere", "platform", "gone", "configmaps"),
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "default", "uid": "cm-c"}})
	p, err := NewPlan(ctx, b, tgt, PlanOptions{})
	require.NoError(t, err)
	assert.Contains(t, p.Warnings, "ValidatingWebhookConfiguration.admissionregistration.k8s.io elsewhere: webhook elsewhere.example.io calls Service platform/gone, "+
		"which the restore does not hold, and fails closed: what it intercepts is refused until the Service has a backend")

	b = backupOf(t, append(hookBackend(), webhookConfig("pods", "hooks", "hook", "pods"))...)
	p, err = NewPlan(ctx, b, tgt, PlanOptions{})
	require.NoError(t, err)
	assert.True(t, slices.ContainsFunc(p.Warnings, func(w string) bool {
		return strings.Contains(w, "webhook pods.example.io intercepts its own backend Deployment.apps hooks/backend (failurePolicy Fail)")
	}), "%q", p.Warnings)
}

// Restored into a cluster that runs no workload, the backend never becomes Available:
// it fails within the item's time, naming what it serves, and the webhook
// configuration behind it is not created; nothing waits for ever.
func TestUnavailableBackendFailsNamed(t *testing.T) {
	ctx := context.Background()
	b := backupOf(t, append(hookBackend(), webhookConfig("guard", "hooks", "hook", "configmaps"))...)
	_, tgt := cluster(t, memcluster.Options{})
	rep, err := Run(ctx, b, tgt, PlanOptions{}, RunOptions{ItemTimeout: 2 * time.Second, Retry: fastRetry})
	require.NoError(t, err)
	res := map[string]ObjectResult{}
	for o := range rep.Objects() {
		res[o.Kind+"/"+o.Name] = o
	}
	require.Equal(t, Failed, res["Deployment/backend"].Status)
	assert.Contains(t, res["Deployment/backend"].Reason, "not Available (")
	assert.Contains(t, res["Deployment/backend"].Reason, "it serves webhook guard.example.io of ValidatingWebhookConfiguration.admissionregistration.k8s.io guard (Service hooks/hook)")
	assert.Equal(t, Skipped, res["ValidatingWebhookConfiguration/guard"].Status)
	assert.Equal(t, Restored, res["Deployment/other"].Status, "the namespace's other workload is not waited for")
}

// An APIService comes after its Service and backend; the objects of its group and
// version after it, which is waited for until Available.
func TestAPIServiceAfterItsBackend(t *testing.T) {
	ctx := context.Background()
	objs := append(hookBackend(),
		map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": map[string]any{"name": "v1.things.example.io", "uid": "as-things"},
			"spec": map[string]any{"group": "things.example.io", "version": "v1", "service": map[string]any{"namespace": "hooks", "name": "hook"},
				"groupPriorityMinimum": int64(100), "versionPriority": int64(10)}},
		map[string]any{"apiVersion": "things.example.io/v1", "kind": "Thing", "metadata": map[string]any{"name": "t", "namespace": "hooks", "uid": "thing-t"}})
	b := backupOf(t, objs...)
	_, tgt := cluster(t, memcluster.Options{})
	p, err := NewPlan(ctx, b, tgt, PlanOptions{})
	require.NoError(t, err)
	deps, gate := dependsOnOf(t, p, "APIService", "v1.things.example.io")
	assert.ElementsMatch(t, []string{"Deployment/backend (api-services)", "Service/hook (api-services)"}, deps)
	assert.Equal(t, "waits until Available: it serves 1 object(s) of things.example.io/v1", gate)
	deps, _ = dependsOnOf(t, p, "Thing", "t")
	assert.Contains(t, deps, "APIService/v1.things.example.io (api-services)")
	_, gate = dependsOnOf(t, p, "Deployment", "backend")
	assert.Contains(t, gate, "it serves APIService.apiregistration.k8s.io v1.things.example.io (Service hooks/hook)")
}

// gadgetCRD is a CRD serving v1 and v2 whose versions a webhook of Service hooks/hook
// converts; it stores v1.
func gadgetCRD() map[string]any {
	var versions []any
	for _, v := range []string{"v1", "v2"} {
		versions = append(versions, map[string]any{"name": v, "served": true, "storage": v == "v1",
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
	}
	return map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets.example.io", "uid": "crd-gadgets"},
		"spec": map[string]any{"group": "example.io", "scope": "Namespaced", "versions": versions,
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
			"conversion": map[string]any{"strategy": "Webhook", "webhook": map[string]any{"conversionReviewVersions": []any{"v1"},
				"clientConfig": map[string]any{"service": map[string]any{"namespace": "hooks", "name": "hook"}}}}}}
}

// Custom resources of a CRD a webhook converts are restored at the version it stores
// where the backup holds it, and wait for nothing; at another version, they wait for
// the webhook's backend.
func TestConvertedResourcesAtTheStoredVersion(t *testing.T) {
	ctx := context.Background()
	_, tgt := cluster(t, memcluster.Options{})
	gadget := func(v string) map[string]any {
		return map[string]any{"apiVersion": "example.io/" + v, "kind": "Gadget", "metadata": map[string]any{"name": "g", "namespace": "hooks", "uid": "gadget-g"}}
	}
	// The backup holds the preferred version, v2, alone.
	b := backupOf(t, append(hookBackend(), gadgetCRD(), gadget("v2"))...)
	p, err := NewPlan(ctx, b, tgt, PlanOptions{})
	require.NoError(t, err)
	deps, _ := dependsOnOf(t, p, "Gadget", "g")
	assert.Contains(t, deps, "Deployment/backend (conversion-webhooks)")
	_, gate := dependsOnOf(t, p, "Deployment", "backend")
	assert.Equal(t, "waits until Available: it converts the gadgets.example.io restored at v2 (Service hooks/hook)", gate)

	// With v1 in the backup too (Velero's EnableAPIGroupVersions), v1 is chosen.
	b = backupWithVersions(t, append(hookBackend(), gadgetCRD()), gadget("v1"), gadget("v2"))
	p, err = NewPlan(ctx, b, tgt, PlanOptions{})
	require.NoError(t, err)
	for _, c := range p.Versions {
		if c.Resource == "gadgets" {
			assert.Equal(t, "v1", c.Version, c.Explanation)
			assert.Contains(t, c.Explanation, "the version its CRD stores")
		}
	}
	deps, _ = dependsOnOf(t, p, "Gadget", "g")
	assert.NotContains(t, fmt.Sprint(deps), "conversion-webhooks")
	_, gate = dependsOnOf(t, p, "Deployment", "backend")
	assert.Empty(t, gate)
}

// backupWithVersions is backupOf(objs) with one object more at several versions, the
// last one preferred.
func backupWithVersions(t *testing.T, objs []map[string]any, versions ...map[string]any) *archive.Backup {
	t.Helper()
	var buf bytes.Buffer
	w, err := archive.NewWriter(&buf, archive.Format11)
	require.NoError(t, err)
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o}
		require.NoError(t, w.Add(u, strings.ToLower(u.GetKind())+"s", true))
	}
	for i, o := range versions {
		u := &unstructured.Unstructured{Object: o}
		require.NoError(t, w.Add(u, strings.ToLower(u.GetKind())+"s", i == len(versions)-1))
	}
	require.NoError(t, w.Close())
	b, err := archive.Read(context.Background(), &buf, archive.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b
}

// The API server's refusals on a webhook's account become *WebhookErrors naming it,
// and its Service where the message gives it.
func TestWebhookErrors(t *testing.T) {
	// As a retry ended by the object's time leaves it.
	status := func(msg string) error {
		return errors.Join(context.Canceled, apierrors.NewInternalError(errors.New(msg)))
	}
	err := asWebhookError(status(`failed calling webhook "guard.example.io": failed to call webhook: Post "https://hook.hooks.svc:443/validate?timeout=10s": service "hook" not found`))
	var we *WebhookError
	require.ErrorAs(t, err, &we)
	assert.Equal(t, "hooks/hook", we.Service)
	assert.False(t, we.Denied)
	assert.True(t, apierrors.IsInternalError(err), "the API server's error stays inside")
	assert.Equal(t, `admission webhook "guard.example.io" (Service hooks/hook) could not be called: failed to call webhook: Post "https://hook.hooks.svc:443/validate?timeout=10s": service "hook" not found`, err.Error())

	denied := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "c",
		errors.New(`admission webhook "guard.example.io" denied the request: colour must be blue`))
	require.ErrorAs(t, asWebhookError(denied), &we)
	assert.True(t, we.Denied)
	assert.Equal(t, "colour must be blue", we.Reason)
	assert.Equal(t, `admission webhook "guard.example.io" denied the request: colour must be blue`, we.Error(),
		"the API server's own words, which users search for")

	other := status("etcd is away")
	assert.False(t, errors.As(asWebhookError(other), &we))
}
