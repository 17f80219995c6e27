package contract

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	services = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	jobs     = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	pods     = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

func service(ns, name string, spec map[string]any) *unstructured.Unstructured {
	if spec["ports"] == nil {
		spec["ports"] = []any{map[string]any{"port": int64(80)}}
	}
	return obj("v1", "Service", ns, name, map[string]any{"spec": spec})
}

// serviceAllocation: a Service gets a cluster IP from the server's range, and node
// ports from 30000-32767; an IP outside the range, or taken, and a taken node port, are
// Invalid. A headless Service stays headless.
func (s *suite) serviceAllocation(t *testing.T) {
	cidr, err := netip.ParsePrefix(s.opts.ServiceCIDR)
	require.NoError(t, err, "Options.ServiceCIDR")
	client := s.client.Resource(services).Namespace(s.ns)
	ctx := s.ctx(t)

	web, err := client.Create(ctx, service(s.ns, "alloc-web", map[string]any{}), metav1.CreateOptions{})
	require.NoError(t, err)
	ip, _, _ := unstructured.NestedString(web.Object, "spec", "clusterIP")
	addr, err := netip.ParseAddr(ip)
	require.NoError(t, err, "a cluster IP is allocated: %q", ip)
	assert.True(t, cidr.Contains(addr), "%s is in %s", ip, cidr)
	ips, _, _ := unstructured.NestedStringSlice(web.Object, "spec", "clusterIPs")
	assert.Equal(t, []string{ip}, ips)

	_, err = client.Create(ctx, service(s.ns, "alloc-taken", map[string]any{"clusterIP": ip}), metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "a taken IP: %v", err)
	assert.Contains(t, err.Error(), "already allocated")

	outside := "192.168.77.10"
	_, err = client.Create(ctx, service(s.ns, "alloc-outside", map[string]any{"clusterIP": outside, "clusterIPs": []any{outside}}), metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "an IP outside the range: %v", err)
	assert.Contains(t, err.Error(), "spec.clusterIPs")
	assert.Contains(t, err.Error(), "does not match the current range")

	headless, err := client.Create(ctx, service(s.ns, "alloc-headless", map[string]any{"clusterIP": "None"}), metav1.CreateOptions{})
	require.NoError(t, err)
	ip, _, _ = unstructured.NestedString(headless.Object, "spec", "clusterIP")
	assert.Equal(t, "None", ip)

	np, err := client.Create(ctx, service(s.ns, "alloc-nodeport", map[string]any{"type": "NodePort"}), metav1.CreateOptions{})
	require.NoError(t, err)
	ports, _, _ := unstructured.NestedSlice(np.Object, "spec", "ports")
	require.Len(t, ports, 1)
	port, ok := ports[0].(map[string]any)["nodePort"].(int64)
	require.True(t, ok, "a node port is allocated: %v", ports[0])
	assert.True(t, port >= 30000 && port <= 32767, "%d is in the node port range", port)
	_, err = client.Create(ctx, service(s.ns, "alloc-nodeport-taken", map[string]any{"type": "NodePort",
		"ports": []any{map[string]any{"port": int64(80), "nodePort": port}}}), metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "a taken node port: %v", err)
	assert.Contains(t, err.Error(), "provided port is already allocated")
}

// jobSelector: a Job's selector is generated from its own UID; a selector or a
// controller-uid label carried over from another Job is Invalid.
func (s *suite) jobSelector(t *testing.T) {
	client := s.client.Resource(jobs).Namespace(s.ns)
	ctx := s.ctx(t)
	template := func(labels map[string]any) map[string]any {
		return map[string]any{"metadata": map[string]any{"labels": labels}, "spec": map[string]any{"restartPolicy": "Never",
			"containers": []any{map[string]any{"name": "c", "image": "busybox:1.37"}}}}
	}
	job, err := client.Create(ctx, obj("batch/v1", "Job", s.ns, "selector-generated", map[string]any{
		"spec": map[string]any{"template": template(map[string]any{"app": "x"})}}), metav1.CreateOptions{})
	require.NoError(t, err)
	uid := string(job.GetUID())
	sel, _, _ := unstructured.NestedStringMap(job.Object, "spec", "selector", "matchLabels")
	assert.Equal(t, map[string]string{"batch.kubernetes.io/controller-uid": uid}, sel)
	labels, _, _ := unstructured.NestedStringMap(job.Object, "spec", "template", "metadata", "labels")
	for _, l := range []string{"controller-uid", "batch.kubernetes.io/controller-uid"} {
		assert.Equal(t, uid, labels[l], l)
	}
	assert.Equal(t, "selector-generated", labels["batch.kubernetes.io/job-name"])

	foreign := "29ceaceb-e4ee-4ad1-a40b-1b0d5282b26c"
	_, err = client.Create(ctx, obj("batch/v1", "Job", s.ns, "selector-foreign", map[string]any{"spec": map[string]any{
		"selector": map[string]any{"matchLabels": map[string]any{"batch.kubernetes.io/controller-uid": foreign}},
		"template": template(map[string]any{"batch.kubernetes.io/controller-uid": foreign, "controller-uid": foreign})}}), metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "a selector from another Job: %v", err)
	assert.True(t, strings.Contains(err.Error(), "`selector` not auto-generated"), err.Error())
	assert.Contains(t, err.Error(), "must be '", "the template's controller-uid must be the Job's own")
}

// podUpdates: a Pod's spec cannot change in an update but for its images and a few
// scheduling fields; the node it is bound to is not one of them. Its metadata can.
func (s *suite) podUpdates(t *testing.T) {
	client := s.client.Resource(pods).Namespace(s.ns)
	ctx := s.ctx(t)
	pod, err := client.Create(ctx, obj("v1", "Pod", s.ns, "bound", map[string]any{"spec": map[string]any{"nodeName": "contract-node",
		"containers": []any{map[string]any{"name": "c", "image": "busybox:1.37"}}}}), metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = client.Delete(context.Background(), "bound", metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})

	containers, _, _ := unstructured.NestedSlice(pod.Object, "spec", "containers")
	containers[0].(map[string]any)["image"] = "busybox:1.36"
	require.NoError(t, unstructured.SetNestedSlice(pod.Object, containers, "spec", "containers"))
	pod.SetLabels(map[string]string{"updated": "yes"})
	pod, err = client.Update(ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err, "an image and the labels change in place")

	unbound := pod.DeepCopy()
	unstructured.RemoveNestedField(unbound.Object, "spec", "nodeName")
	_, err = client.Update(ctx, unbound, metav1.UpdateOptions{})
	require.True(t, apierrors.IsInvalid(err), "the node a Pod is bound to cannot be taken away: %v", err)
	assert.Contains(t, err.Error(), "pod updates may not change fields other than")
	got, err := client.Get(ctx, "bound", metav1.GetOptions{})
	require.NoError(t, err)
	nodeName, _, _ := unstructured.NestedString(got.Object, "spec", "nodeName")
	assert.Equal(t, "contract-node", nodeName, "nothing of a refused update is kept")
}

// paging: a list with a limit comes in pages joined by continue tokens, every object
// once; a token that is not one is a bad request; a token whose version is no longer
// kept (compacted away) is 410 Gone, and the client starts again.
func (s *suite) paging(t *testing.T) {
	ns := s.ns + "-paging"
	s.createNamespace(t, ns)
	client := s.client.Resource(configmaps).Namespace(ns)
	ctx := s.ctx(t)
	want := map[string]bool{}
	for i := range 7 {
		name := "page-" + string(rune('a'+i))
		_, err := client.Create(ctx, obj("v1", "ConfigMap", ns, name, nil), metav1.CreateOptions{})
		require.NoError(t, err)
		want[name] = true
	}
	got := map[string]int{}
	cont, pages := "", 0
	for {
		l, err := client.List(ctx, metav1.ListOptions{Limit: 3, Continue: cont})
		require.NoError(t, err)
		pages++
		assert.LessOrEqual(t, len(l.Items), 3)
		for _, o := range l.Items {
			got[o.GetName()]++
		}
		if cont = l.GetContinue(); cont == "" {
			break
		}
	}
	assert.Equal(t, 3, pages)
	require.Len(t, got, len(want))
	for name := range want {
		assert.Equal(t, 1, got[name], name)
	}

	_, err := client.List(ctx, metav1.ListOptions{Limit: 3, Continue: "not-a-token"})
	assert.True(t, apierrors.IsBadRequest(err), "a made-up token: %v", err)

	first, err := client.List(ctx, metav1.ListOptions{Limit: 1})
	require.NoError(t, err)
	token := first.GetContinue()
	require.NotEmpty(t, token)
	s.eventually(t, "the continue token to expire", func() bool {
		for i := range 20 { // changes, so that the token's version falls out of what is kept
			name := "churn-" + string(rune('a'+i))
			client.Create(ctx, obj("v1", "ConfigMap", ns, name, nil), metav1.CreateOptions{})
			client.Delete(ctx, name, metav1.DeleteOptions{})
		}
		_, err := client.List(ctx, metav1.ListOptions{Limit: 1, Continue: token})
		if err != nil && !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Fatalf("an old token: want 410, got %v", err)
		}
		return err != nil
	})
}
