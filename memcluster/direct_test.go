package memcluster

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/restoregraph/restoregraph/internal/jsontree"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// directCase is one create, sent to one server by Create and to another as a POST.
type directCase struct {
	name string
	gvr  schema.GroupVersionResource
	ns   string
	obj  map[string]any
}

func directCases() []directCase {
	gvr := func(group, version, resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
	}
	m := func(fields map[string]any, ns, name string) map[string]any {
		return u("", "", ns, name, fields).Object
	}
	withKind := func(apiVersion, kind string, obj map[string]any) map[string]any {
		obj["apiVersion"], obj["kind"] = apiVersion, kind
		return obj
	}
	return []directCase{
		{"namespace", gvr("", "v1", "namespaces"), "", withKind("v1", "Namespace", m(nil, "", "a"))},
		{"configmap", gvr("", "v1", "configmaps"), "a", withKind("v1", "ConfigMap", m(map[string]any{"data": map[string]any{"k": "v"}}, "a", "cm"))},
		// No apiVersion, kind or namespace: the request's.
		{"configmap named by the request", gvr("", "v1", "configmaps"), "a", m(map[string]any{"data": map[string]any{"k": "v"}}, "", "bare")},
		{"generated name", gvr("", "v1", "secrets"), "a", withKind("v1", "Secret", map[string]any{"metadata": map[string]any{"generateName": "s-"}})},
		{"server-set metadata dropped", gvr("", "v1", "configmaps"), "a", withKind("v1", "ConfigMap", map[string]any{"metadata": map[string]any{
			"name": "old", "uid": "0000", "resourceVersion": "7", "generation": int64(4), "selfLink": "/x", "managedFields": []any{map[string]any{"manager": "m"}},
			"labels": map[string]any{"app": "x"}, "ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "1234"}},
		}})},
		{"service", gvr("", "v1", "services"), "a", withKind("v1", "Service", m(map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}}, "a", "svc"))},
		{"headless service", gvr("", "v1", "services"), "a", withKind("v1", "Service", m(map[string]any{"spec": map[string]any{"clusterIP": "None"}}, "a", "headless"))},
		{"node port service", gvr("", "v1", "services"), "a", withKind("v1", "Service", m(map[string]any{"spec": map[string]any{"type": "NodePort",
			"ports": []any{map[string]any{"port": int64(80)}, map[string]any{"port": int64(81), "nodePort": int64(30100)}}}}, "a", "np"))},
		{"deployment, status dropped", gvr("apps", "v1", "deployments"), "a", withKind("apps/v1", "Deployment", m(map[string]any{
			"spec": map[string]any{"replicas": int64(2)}, "status": map[string]any{"replicas": int64(2)}}, "a", "d"))},
		{"job", gvr("batch", "v1", "jobs"), "a", withKind("batch/v1", "Job", m(map[string]any{"spec": map[string]any{
			"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never"}}}}, "a", "j"))},
		{"crd", gvr("apiextensions.k8s.io", "v1", "customresourcedefinitions"), "", withKind("apiextensions.k8s.io/v1", "CustomResourceDefinition", m(map[string]any{"spec": map[string]any{
			"group": "x.io", "scope": "Namespaced", "names": map[string]any{"plural": "widgets", "kind": "Widget"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true}},
		}}, "", "widgets.x.io"))},
		{"custom resource", gvr("x.io", "v1", "widgets"), "a", withKind("x.io/v1", "Widget", m(map[string]any{"spec": map[string]any{"size": 1.5}}, "a", "w"))},
	}
}

// directAndPosted starts two servers, one for Create and one for POSTs, with a client of
// each.
func directAndPosted(t *testing.T) (direct *Server, directClient dynamic.Interface, posted *Server, postClient dynamic.Interface) {
	t.Helper()
	direct, err := StartServer(Options{})
	require.NoError(t, err)
	t.Cleanup(direct.Close)
	posted, err = StartServer(Options{})
	require.NoError(t, err)
	t.Cleanup(posted.Close)
	directClient, err = dynamic.NewForConfig(direct.Config())
	require.NoError(t, err)
	postClient, err = dynamic.NewForConfig(posted.Config())
	require.NoError(t, err)
	return direct, directClient, posted, postClient
}

// TestCreateIsAPost holds Create to a POST of the same object to another server: the
// same object stored, but for what the server makes anew each time (uid, time), and
// the object Create leaves in obj is the one a read serves.
func TestCreateIsAPost(t *testing.T) {
	direct, directClient, posted, postClient := directAndPosted(t)
	ctx := context.Background()
	for _, c := range directCases() {
		sent := (&unstructured.Unstructured{Object: c.obj}).DeepCopy()
		// What lies below the top level and metadata is shared with c.obj.
		obj := maps.Clone(c.obj)
		if md, ok := obj["metadata"].(map[string]any); ok {
			obj["metadata"] = maps.Clone(md)
		}
		require.NoError(t, direct.Create(ctx, c.gvr, c.ns, obj), c.name)
		for k, v := range sent.Object {
			if k != "metadata" {
				assert.Equal(t, v, c.obj[k], "%s: %s is replaced where the server changes it, not changed", c.name, k)
			}
		}
		p, err := postClient.Resource(c.gvr).Namespace(c.ns).Create(ctx, sent, metav1.CreateOptions{})
		require.NoError(t, err, c.name)
		if c.gvr.Resource == "customresourcedefinitions" {
			waitServed(t, direct, "widgets")
			waitServed(t, posted, "widgets")
		}
		created := &unstructured.Unstructured{Object: roundTrip(t, obj)}
		if name := created.GetName(); p.GetGenerateName() != "" {
			assert.True(t, strings.HasPrefix(name, "s-") && len(name) == 7, "%s: a generated name %q", c.name, name)
			p.SetName(name)
		}
		assert.Equal(t, comparable(t, p), comparable(t, created), c.name)
		if c.gvr.Resource != "customresourcedefinitions" { // changed since, as it was established
			d, err := directClient.Resource(c.gvr).Namespace(c.ns).Get(ctx, created.GetName(), metav1.GetOptions{})
			require.NoError(t, err, c.name)
			assert.Equal(t, d.Object, created.Object, "%s: the object left in obj is the one served", c.name)
		}
	}
}

// TestCreationTimestampIsTheSecondOfTheCreate: the creationTimestamp a create is given
// is the time of the create, in UTC to the second, though it is formatted once a
// second; a clock set back is followed, not the second formatted last.
func TestCreationTimestampIsTheSecondOfTheCreate(t *testing.T) {
	var st stamp
	zone := time.FixedZone("UTC+2", 2*60*60)
	at := time.Date(2026, 11, 29, 12, 0, 5, 100, zone)
	assert.Equal(t, "2026-11-29T10:00:05Z", st.at(at))
	assert.Equal(t, "2026-11-29T10:00:05Z", st.at(at.Add(999*time.Millisecond)), "the same second")
	assert.Equal(t, "2026-11-29T10:00:06Z", st.at(at.Add(time.Second)), "the next")
	assert.Equal(t, "2026-11-29T10:00:04Z", st.at(at.Add(-time.Second)), "a clock set back")

	s, err := StartServer(Options{})
	require.NoError(t, err)
	defer s.Close()
	before := time.Now().Truncate(time.Second)
	obj := map[string]any{"metadata": map[string]any{"name": "a"}}
	require.NoError(t, s.Create(context.Background(), schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", obj))
	created, err := time.Parse(time.RFC3339, obj["metadata"].(map[string]any)["creationTimestamp"].(string))
	require.NoError(t, err)
	assert.False(t, created.Before(before) || created.After(time.Now()), "created at %v, between %v and now", created, before)
}

// TestCreatedUIDsAreRandomUUIDs: each created object's UID is a version 4 UUID of the
// RFC's variant, as the API server's, and no two are the same.
func TestCreatedUIDsAreRandomUUIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		s := newUID()
		u, err := uuid.Parse(s)
		require.NoError(t, err)
		require.Equal(t, s, u.String(), "canonical form")
		require.Equal(t, uuid.Version(4), u.Version(), s)
		require.Equal(t, uuid.RFC4122, u.Variant(), s)
		require.False(t, seen[s], "%s given twice", s)
		seen[s] = true
	}
}

// comparable is o as JSON, without what a server makes anew for every create.
func comparable(t *testing.T, o *unstructured.Unstructured) map[string]any {
	uid := string(o.GetUID())
	o = o.DeepCopy()
	o.SetUID("")
	o.SetCreationTimestamp(metav1.Time{})
	data, err := json.Marshal(o.Object)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(string(data), uid, "UID")), &out))
	return out
}

// roundTrip is obj as JSON decodes it.
func roundTrip(t *testing.T, obj map[string]any) map[string]any {
	data, err := json.Marshal(obj)
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(data))
	return u.Object
}

func waitServed(t *testing.T, s *Server, resource string) {
	t.Helper()
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		_, ok := s.types[schema.GroupResource{Group: "x.io", Resource: resource}]
		return ok
	}, 5*time.Second, 5*time.Millisecond)
}

// TestCreateRefusesAsAPost: the errors a POST is answered with, as client-go reports
// them, and an object refused is sent again unchanged but for its top level and
// metadata.
func TestCreateRefusesAsAPost(t *testing.T) {
	s, err := StartServer(Options{ServiceCIDR: "10.0.0.0/30"})
	require.NoError(t, err)
	defer s.Close()
	client, err := dynamic.NewForConfig(s.Config())
	require.NoError(t, err)
	ctx := context.Background()
	ns := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	svcs := schema.GroupVersionResource{Version: "v1", Resource: "services"}
	jobs := schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	_, err = client.Resource(ns).Create(ctx, u("v1", "Namespace", "", "a", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.Resource(cms).Namespace("a").Create(ctx, u("v1", "ConfigMap", "a", "taken", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		gvr  schema.GroupVersionResource
		ns   string
		obj  *unstructured.Unstructured
	}{
		{"exists", cms, "a", u("v1", "ConfigMap", "a", "taken", nil)},
		{"no namespace", cms, "none", u("v1", "ConfigMap", "none", "c", nil)},
		{"another namespace", cms, "a", u("v1", "ConfigMap", "b", "c", nil)},
		{"another kind", cms, "a", u("v1", "Secret", "a", "c", nil)},
		{"another version", cms, "a", u("v2", "ConfigMap", "a", "c", nil)},
		{"not served", schema.GroupVersionResource{Group: "x.io", Version: "v1", Resource: "widgets"}, "a", u("x.io/v1", "Widget", "a", "w", nil)},
		{"bad name", cms, "a", u("v1", "ConfigMap", "a", "a/b", nil)},
		{"no name", cms, "a", u("v1", "ConfigMap", "a", "", nil)},
		{"cluster IP outside the range", svcs, "a", u("v1", "Service", "a", "s", map[string]any{"spec": map[string]any{"clusterIP": "10.9.9.9"}})},
		{"node port outside the range", svcs, "a", u("v1", "Service", "a", "s", map[string]any{"spec": map[string]any{"type": "NodePort",
			"ports": []any{map[string]any{"port": int64(80)}, map[string]any{"port": int64(81), "nodePort": int64(80)}}}})},
		{"job with a selector", jobs, "a", u("batch/v1", "Job", "a", "j", map[string]any{"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"x": "y"}}}})},
	} {
		_, postErr := client.Resource(c.gvr).Namespace(c.ns).Create(ctx, c.obj, metav1.CreateOptions{})
		require.Error(t, postErr, c.name)
		obj := c.obj.DeepCopy().Object
		err := s.Create(ctx, c.gvr, c.ns, obj)
		require.Error(t, err, c.name)
		var want, got *apierrors.StatusError
		require.ErrorAs(t, postErr, &want, c.name)
		require.ErrorAs(t, err, &got, c.name)
		assert.Equal(t, want.ErrStatus.Code, got.ErrStatus.Code, "%s: %v", c.name, err)
		assert.Equal(t, want.ErrStatus.Reason, got.ErrStatus.Reason, "%s: %v", c.name, err)
		assert.Equal(t, want.ErrStatus.Message, got.ErrStatus.Message, c.name)
		for k, v := range c.obj.Object {
			if k != "metadata" {
				assert.Equal(t, v, obj[k], "%s: %s is changed only once the object is accepted", c.name, k)
			}
		}
	}
}

// TestCreateAfterClose: a stopped server refuses, as it answers a request.
func TestCreateAfterClose(t *testing.T) {
	s, err := StartServer(Options{})
	require.NoError(t, err)
	s.Close()
	err = s.Create(context.Background(), schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", u("v1", "Namespace", "", "a", nil).Object)
	assert.True(t, apierrors.IsServiceUnavailable(err), "%v", err)
}

// TestCreateTakesRawJSON: a create whose top-level objects but metadata are their JSON
// (jsontree.Raw, as a restore leaves what it does not read) stores what a POST of the
// decoded object stores, the kinds the server reads below metadata (a Service's ports,
// a Job's template, a CRD's names) included.
func TestCreateTakesRawJSON(t *testing.T) {
	direct, directClient, posted, postClient := directAndPosted(t)
	ctx := context.Background()
	for _, c := range directCases() {
		sent := (&unstructured.Unstructured{Object: c.obj}).DeepCopy()
		obj, raws := map[string]any{}, 0
		for k, v := range sent.DeepCopy().Object {
			if _, isObject := v.(map[string]any); isObject && k != "metadata" {
				data, err := json.Marshal(v)
				require.NoError(t, err)
				v, raws = jsontree.Raw(data), raws+1
			}
			obj[k] = v
		}
		require.NoError(t, direct.Create(ctx, c.gvr, c.ns, obj), c.name)
		p, err := postClient.Resource(c.gvr).Namespace(c.ns).Create(ctx, sent, metav1.CreateOptions{})
		require.NoError(t, err, c.name)
		if c.gvr.Resource == "customresourcedefinitions" {
			waitServed(t, direct, "widgets")
			waitServed(t, posted, "widgets")
			continue // changed since, as it was established
		}
		name := (&unstructured.Unstructured{Object: obj}).GetName()
		d, err := directClient.Resource(c.gvr).Namespace(c.ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, c.name)
		if p.GetGenerateName() != "" {
			p.SetName(name)
		}
		assert.Equal(t, comparable(t, p), comparable(t, d), "%s (%d values as JSON)", c.name, raws)
	}
}
