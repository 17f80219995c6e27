package restore

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

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
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta("app")},
		pod("web-1", nil, nil),
		pod("legacy", nil, []any{map[string]any{"name": "app-token-x7k2p", "secret": map[string]any{"secretName": "app-token-x7k2p"}}}),
		pod("hooked", map[string]any{"init.hook.restore.velero.io/container-image": "busybox:1.37"}, nil),
	}
}

// pod is a scheduled Pod of the ServiceAccount app, as its backup holds it, with
// annotations and volumes (each mounted) as given.
func pod(name string, annotations map[string]any, volumes []any) map[string]any {
	md := map[string]any{"name": name, "namespace": "shop", "uid": "uid-" + name, "resourceVersion": "7",
		"labels": map[string]any{"app": "web"}, "creationTimestamp": "2026-11-01T10:00:00Z"}
	if annotations != nil {
		md["annotations"] = annotations
	}
	container := map[string]any{"name": "app", "image": "shop/web:1.2", "args": []any{"--ratio=0.5", "é ☃ <&>"}}
	var mounts []any
	for _, v := range volumes {
		mounts = append(mounts, map[string]any{"name": v.(map[string]any)["name"], "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"})
	}
	spec := map[string]any{"serviceAccountName": "app", "nodeName": "node-a", "priority": int64(0),
		"containers": []any{container}, "restartPolicy": "Always"}
	if volumes != nil {
		container["volumeMounts"], spec["volumes"] = mounts, volumes
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec,
		"status": map[string]any{"phase": "Running", "podIP": "10.244.0.7"}}
}

// Objects no step reads below their metadata are restored from their JSON, not decoded
// (leavesUnread), and the target holds each as the backup does, in the server of this
// process and through a client alike; the Service, which an action reads, is decoded.
// A Pod's spec is read from its JSON by the Pod action, which takes out its node and
// priority; it is decoded where the action takes out a legacy token, and where the
// Pod's annotations ask for a hook, which adds an init container.
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
				if _, ok := o.Backup.Object["status"].(jsontree.Raw); ok {
					raw = true
				}
				mu.Lock()
				unread[o.Item.Kind+" "+o.Item.Name] = raw
				mu.Unlock()
			}
			ctx := context.Background()
			p, err := NewPlan(ctx, b, tgt, PlanOptions{})
			require.NoError(t, err)
			rep, err := Apply(ctx, p, tgt, ro)
			require.NoError(t, err)
			require.True(t, rep.OK(), "summary %v, first failure: %v", rep.Summary, firstFailure(rep))
			assert.Equal(t, map[string]bool{"Namespace shop": false, "Deployment web": true, "ConfigMap settings": true, "Secret token": true,
				"RoleBinding view": true, "Service front": false, "ServiceAccount app": false,
				"Pod web-1": true, "Pod legacy": false, "Pod hooked": false}, unread)

			for _, want := range objs[1:] {
				gv, err := schema.ParseGroupVersion(want["apiVersion"].(string))
				require.NoError(t, err)
				kind := want["kind"].(string)
				gvr := gv.WithResource(map[string]string{"Deployment": "deployments", "ConfigMap": "configmaps", "Secret": "secrets", "RoleBinding": "rolebindings",
					"Service": "services", "ServiceAccount": "serviceaccounts", "Pod": "pods"}[kind])
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
						if kind == "Pod" {
							// Its node, priority and legacy token left out, a hook's init
							// container added.
							spec := maps.Clone(v.(map[string]any))
							delete(spec, "nodeName")
							delete(spec, "priority")
							if _, ok := spec["volumes"]; ok {
								c := maps.Clone(spec["containers"].([]any)[0].(map[string]any))
								c["volumeMounts"] = []any{}
								spec["containers"], spec["volumes"] = []any{c}, []any{}
							}
							if md["name"] == "hooked" {
								spec["initContainers"] = []any{map[string]any{"name": "restore-init-hooked", "image": "busybox:1.37"}}
							}
							assert.Equal(t, spec, got.Object["spec"], "%s %s", kind, md["name"])
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

// slowAccounts creates through the server in this process, a ServiceAccount after a
// pause, and lists what it created, in order.
type slowAccounts struct {
	*memcluster.Server
	mu      sync.Mutex
	created []string
}

func (c *slowAccounts) Create(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj map[string]any) error {
	if gvr.Resource == "serviceaccounts" {
		time.Sleep(100 * time.Millisecond)
	}
	err := c.Server.Create(ctx, gvr, namespace, obj)
	c.mu.Lock()
	c.created = append(c.created, gvr.Resource+" "+namespace)
	c.mu.Unlock()
	return err
}

// The Pod action asks for a Pod's ServiceAccount in the backup's namespace, which the
// Pod waits for, whether its spec is read from its JSON or, its namespace mapped,
// decoded.
func TestPodWaitsForItsServiceAccount(t *testing.T) {
	objs := []map[string]any{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "uid-ns"}},
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "app", "namespace": "shop", "uid": "uid-app"}},
		pod("web-1", nil, nil),
	}
	b := backupOf(t, objs...)
	for _, mapped := range []bool{false, true} {
		t.Run(fmt.Sprintf("mapped=%t", mapped), func(t *testing.T) {
			srv, tgt := cluster(t, memcluster.Options{})
			creator := &slowAccounts{Server: srv}
			tgt.creator = creator
			po, ns := PlanOptions{}, "shop"
			if mapped {
				po.Selection.NamespaceMappings, ns = map[string]string{"shop": "shop-2"}, "shop-2"
			}
			ctx := context.Background()
			p, err := NewPlan(ctx, b, tgt, po)
			require.NoError(t, err)
			rep, err := Apply(ctx, p, tgt, RunOptions{Retry: fastRetry})
			require.NoError(t, err)
			require.True(t, rep.OK(), "summary %v, first failure: %v", rep.Summary, firstFailure(rep))
			assert.Equal(t, []string{"namespaces ", "serviceaccounts " + ns, "pods " + ns}, creator.created)
		})
	}
}

// pausingCreator creates through the server in this process; the first create of each
// resource but namespaces waits until many others have been made (or a second has
// passed), so that the objects read after it meanwhile may take the buffers its body
// was read and written into.
type pausingCreator struct {
	*memcluster.Server
	mu      sync.Mutex
	paused  map[string]bool
	created chan struct{}
}

func (c *pausingCreator) Create(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj map[string]any) error {
	c.mu.Lock()
	first := gvr.Resource != "namespaces" && !c.paused[gvr.Resource]
	c.paused[gvr.Resource] = true
	c.mu.Unlock()
	if first {
	wait:
		for range 100 {
			select {
			case <-c.created:
			case <-time.After(time.Second):
				break wait
			}
		}
	}
	err := c.Server.Create(ctx, gvr, namespace, obj)
	c.created <- struct{}{} // room for every create
	return err
}

// A value left as its JSON is the body's own bytes, in a buffer that the restore uses
// again for another object's body once the object is restored (Object.body), and a
// Pod's spec without its node is written into a slice taken back with its maps
// (plugin.BytesMaker): a ConfigMap and a Pod whose creates wait while many others are
// read and restored hold their own data and spec in the target, not another's written
// into their buffers since.
func TestUnreadBodiesAreTheirOwn(t *testing.T) {
	objs := []map[string]any{{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "uid-ns"}}}
	for i := range 200 {
		name := fmt.Sprintf("c-%03d", i)
		objs = append(objs, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "shop", "uid": "uid-" + name},
			"data":     map[string]any{"v": name}},
			map[string]any{"apiVersion": "v1", "kind": "Pod",
				"metadata": map[string]any{"name": name, "namespace": "shop", "uid": "uid-pod-" + name},
				"spec":     map[string]any{"nodeName": "node-a", "containers": []any{map[string]any{"name": name, "image": "i"}}}})
	}
	b := backupOf(t, objs...)
	srv, tgt := cluster(t, memcluster.Options{})
	tgt.creator = &pausingCreator{Server: srv, paused: map[string]bool{}, created: make(chan struct{}, len(objs))}
	ctx := context.Background()
	p, err := NewPlan(ctx, b, tgt, PlanOptions{})
	require.NoError(t, err)
	rep, err := Apply(ctx, p, tgt, RunOptions{Retry: fastRetry, Workers: 8})
	require.NoError(t, err)
	require.True(t, rep.OK(), "summary %v, first failure: %v", rep.Summary, firstFailure(rep))
	for _, res := range []string{"configmaps", "pods"} {
		list, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: res}).Namespace("shop").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, list.Items, 200)
		for _, o := range list.Items {
			if res == "configmaps" {
				assert.Equal(t, map[string]any{"v": o.GetName()}, o.Object["data"], o.GetName())
				continue
			}
			assert.Equal(t, map[string]any{"containers": []any{map[string]any{"name": o.GetName(), "image": "i"}}}, o.Object["spec"], o.GetName())
		}
	}
}
