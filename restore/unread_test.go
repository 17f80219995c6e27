package restore

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/restoregraph/restoregraph/internal/jsontree"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// unreadObjects are a Namespace and what it holds: kinds no step reads below their
// metadata (a Deployment, a ConfigMap, a Secret, a RoleBinding), and a Service, which
// the built-in Service action reads.
func unreadObjects() []map[string]any {
	meta := func(name string) map[string]any {
		return map[string]any{"name": name, "namespace": "shop", "uid": "uid-" + name, "resourceVersion": "7",
			"labels": map[string]any{"app": "web"}, "creationTimestamp": "2026-11-01T10:00:00Z"}
	}
	return []map[string]any{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "uid-ns"}},
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("web"),
			"spec": map[string]any{"replicas": int64(3), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "shop/web:1.2", "args": []any{"--ratio=0.5", "é ☃ <&>"},
						"resources": map[string]any{"limits": map[string]any{"cpu": "1.5"}}}}}}},
			"status": map[string]any{"replicas": int64(3), "availableReplicas": int64(3)}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("settings"), "data": map[string]any{"a": "1", "b": "line\nnext \"q\""}},
		{"apiVersion": "v1", "kind": "Secret", "metadata": meta("token"), "type": "Opaque", "data": map[string]any{"token": "c2VjcmV0"}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta("view"),
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "default", "namespace": "shop"}}},
		{"apiVersion": "v1", "kind": "Service", "metadata": meta("front"),
			"spec": map[string]any{"selector": map[string]any{"app": "web"}, "ports": []any{map[string]any{"port": int64(80), "protocol": "TCP"}}}},
	}
}

// Objects no step reads below their metadata are restored from their JSON, not decoded
// (leavesUnread), and the target holds each as the backup does, in the server of this
// process and through a client alike; the Service, which an action reads, is decoded.
func TestUnreadObjectsRestoreAsTheBackupHoldsThem(t *testing.T) {
	objs := unreadObjects()
	b := backupOf(t, objs...)
	for _, inProc := range []bool{false, true} {
		t.Run(fmt.Sprintf("in-process=%t", inProc), func(t *testing.T) {
			srv, tgt := cluster(t, memcluster.Options{})
			if inProc {
				tgt = inProcess(srv, tgt)
			}
			var mu sync.Mutex
			unread := map[string]bool{}
			ro := RunOptions{Retry: fastRetry}
			ro.inspect = func(o *Object) {
				_, raw := o.Backup.Object["spec"].(jsontree.Raw)
				if _, ok := o.Backup.Object["data"].(jsontree.Raw); ok {
					raw = true
				}
				if _, ok := o.Backup.Object["roleRef"].(jsontree.Raw); ok {
					raw = true
				}
				mu.Lock()
				unread[o.Item.Kind] = raw
				mu.Unlock()
			}
			ctx := context.Background()
			p, err := NewPlan(ctx, b, tgt, PlanOptions{})
			require.NoError(t, err)
			rep, err := Apply(ctx, p, tgt, ro)
			require.NoError(t, err)
			require.True(t, rep.OK(), "summary %v, first failure: %v", rep.Summary, firstFailure(rep))
			assert.Equal(t, map[string]bool{"Namespace": false, "Deployment": true, "ConfigMap": true, "Secret": true, "RoleBinding": true, "Service": false}, unread)

			for _, want := range objs[1:] {
				gv, err := schema.ParseGroupVersion(want["apiVersion"].(string))
				require.NoError(t, err)
				kind := want["kind"].(string)
				gvr := gv.WithResource(map[string]string{"Deployment": "deployments", "ConfigMap": "configmaps", "Secret": "secrets", "RoleBinding": "rolebindings", "Service": "services"}[kind])
				md := want["metadata"].(map[string]any)
				got, err := tgt.Dynamic.Resource(gvr).Namespace("shop").Get(ctx, md["name"].(string), metav1.GetOptions{})
				require.NoError(t, err, kind)
				for k, v := range want {
					switch k {
					case "metadata", "status":
					case "spec":
						if kind == "Service" {
							spec := got.Object["spec"].(map[string]any)
							assert.Equal(t, v.(map[string]any)["ports"], spec["ports"], kind)
							assert.NotEmpty(t, spec["clusterIP"], kind)
							continue
						}
						assert.Equal(t, v, got.Object[k], "%s %s", kind, k)
					default:
						assert.Equal(t, v, got.Object[k], "%s %s", kind, k)
					}
				}
				assert.NotContains(t, got.Object, "status", kind)
				assert.Equal(t, "web", got.GetLabels()["app"], kind)
			}
		})
	}
}
