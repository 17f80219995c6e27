package restore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/restoregraph/restoregraph/internal/jsontree"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/readiness"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
)

// What a step after the create finds in Object.Target: of an object that is ready once
// it exists, the answer's metadata; of one whose readiness is judged from its content,
// the whole answer.
func TestTargetHoldsWhatTheRestoreReads(t *testing.T) {
	for _, tc := range []struct {
		name        string
		readiness   *readiness.Registry
		wholeWidget bool
	}{
		{"unknown kinds ready on create", nil, false},
		{"unknown kinds judged by kstatus", readiness.NewRegistry(readiness.Healthy), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string]*unstructured.Unstructured{}
			record := func(steps []Step) []Step {
				i := slices.IndexFunc(steps, func(s Step) bool { return s.Name == StepCreate })
				return slices.Insert(steps, i+1, Step{Name: "record", Run: func(_ context.Context, o *Object) error {
					mu.Lock()
					defer mu.Unlock()
					seen[o.Item.Kind+" "+o.Item.Namespace+"/"+o.Item.Name] = o.Target
					return nil
				}})
			}
			rep, err := restoreAll(context.Background(), widgetTarget(t), widgetBackup(t), testOptions{Retry: fastRetry, Readiness: tc.readiness, Steps: record})
			require.NoError(t, err)
			require.True(t, rep.OK(), firstFailure(rep))

			cm := seen["ConfigMap a/settings"]
			require.NotNil(t, cm)
			assert.Equal(t, byName(rep)["configmaps/settings"].NewUID, cm.GetUID())
			assert.NotEmpty(t, cm.GetResourceVersion())
			assert.Equal(t, "cm-a", cm.GetAnnotations()[SourceUIDAnnotation])
			assert.Equal(t, "settings", cm.GetName())
			assert.Equal(t, "a", cm.GetNamespace())
			assert.Equal(t, "ConfigMap", cm.GetKind())
			assert.NotContains(t, cm.Object, "data", "a ConfigMap is ready once it exists: its data is not decoded")

			ns := seen["Namespace /a"]
			require.NotNil(t, ns)
			phase, _, _ := unstructured.NestedString(ns.Object, "status", "phase")
			assert.Equal(t, "Active", phase, "a Namespace's readiness is its phase")

			w := seen["Widget a/w"]
			require.NotNil(t, w)
			_, hasSpec := w.Object["spec"]
			assert.Equal(t, tc.wholeWidget, hasSpec)
		})
	}
}

func TestDecodeMetadata(t *testing.T) {
	u, err := decodeMetadata([]byte(`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web-1","namespace":"shop","uid":"u1",
		"resourceVersion":"7","generation":2,"creationTimestamp":"2026-11-25T10:00:00Z","labels":{"app":"web"},"annotations":{"a":"b"},
		"ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"u0","controller":true}],"finalizers":["f"],
		"managedFields":[{"manager":"restoregraph","fieldsV1":{"f:spec":{}}}]},"spec":{"replicas":3},"status":{"replicas":0}}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": map[string]any{
		"name": "web-1", "namespace": "shop", "uid": "u1", "resourceVersion": "7", "generation": int64(2),
		"creationTimestamp": "2026-11-25T10:00:00Z", "labels": map[string]any{"app": "web"}, "annotations": map[string]any{"a": "b"},
		"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u0", "controller": true}},
		"finalizers":      []any{"f"}}}, u.Object)

	_, err = decodeMetadata([]byte(`{"metadata":[]}`))
	assert.Error(t, err)
}

// A step that replaces an object's Client has its create go through that client.
func TestCreateGoesThroughAClientAStepSet(t *testing.T) {
	var creates atomic.Int32
	wrap := func(steps []Step) []Step {
		i := slices.IndexFunc(steps, func(s Step) bool { return s.Name == StepCreate })
		return slices.Insert(steps, i, Step{Name: "wrap", Run: func(_ context.Context, o *Object) error {
			o.Client = countingCreates{o.Client, &creates}
			return nil
		}})
	}
	rep, err := restoreAll(context.Background(), widgetTarget(t), widgetBackup(t), testOptions{Retry: fastRetry, Steps: wrap})
	require.NoError(t, err)
	require.True(t, rep.OK(), firstFailure(rep))
	assert.Equal(t, int32(rep.Len()), creates.Load(), "every object created through the wrapping client")
}

type countingCreates struct {
	dynamic.ResourceInterface
	n *atomic.Int32
}

func (c countingCreates) Create(ctx context.Context, obj *unstructured.Unstructured, opts metav1.CreateOptions, sub ...string) (*unstructured.Unstructured, error) {
	c.n.Add(1)
	return c.ResourceInterface.Create(ctx, obj, opts, sub...)
}

// The source UID annotation joins an object's annotations; where it has none, or null,
// it is their first.
func TestSetAnnotation(t *testing.T) {
	for _, tc := range []struct {
		name string
		md   map[string]any
		want map[string]any
	}{
		{"among others", map[string]any{"annotations": map[string]any{"a": "1"}}, map[string]any{"a": "1", SourceUIDAnnotation: "u"}},
		{"none", map[string]any{"name": "x"}, map[string]any{SourceUIDAnnotation: "u"}},
		{"null", map[string]any{"annotations": nil}, map[string]any{SourceUIDAnnotation: "u"}},
		{"replacing its own", map[string]any{"annotations": map[string]any{SourceUIDAnnotation: "old"}}, map[string]any{SourceUIDAnnotation: "u"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"metadata": tc.md}}
			setAnnotation(u, nil, SourceUIDAnnotation, "u")
			assert.Equal(t, tc.want, u.Object["metadata"].(map[string]any)["annotations"])
		})
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	setAnnotation(u, nil, SourceUIDAnnotation, "u")
	assert.Equal(t, "u", u.GetAnnotations()[SourceUIDAnnotation])
}

// Every object restored carries the backup's and the restore's names as labels, made
// valid label values where the names are not.
func TestRestoredObjectsCarryTheRunsLabels(t *testing.T) {
	tgt := widgetTarget(t)
	const backupName, restoreName = "nightly/2026-11-26", "a-restore-name-that-is-much-longer-than-sixty-three-characters-allowed"
	rep, err := restoreAll(context.Background(), tgt, widgetBackup(t), testOptions{Retry: fastRetry, BackupName: backupName, Name: restoreName})
	require.NoError(t, err)
	require.True(t, rep.OK(), firstFailure(rep))
	cm := get2(t, tgt, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "a", "settings")
	assert.Equal(t, labelValue(backupName), cm.GetLabels()[BackupNameLabel])
	assert.Equal(t, labelValue(restoreName), cm.GetLabels()[RestoreNameLabel])
	assert.Empty(t, validation.IsValidLabelValue(cm.GetLabels()[RestoreNameLabel]))
	assert.NotEqual(t, restoreName, cm.GetLabels()[RestoreNameLabel])
}

// A binding whose role is not there, which the API server looked up because the user
// restoring may not bind it, says which role and why it was looked up: the server's
// NotFound names the binding's resource and the role's name (kube-apiserver v1.37;
// TestABindingRefusedForARoleNotThereSaysWhy holds it to that), or the role's. Other
// NotFounds, and a NotFound of another kind of object, are left as they are; each is
// still a NotFound to apierrors.
func TestABindingsMissingRoleSaysWhyItWasLookedUp(t *testing.T) {
	binding := &manifest.Item{Type: &manifest.Type{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings", Kind: "RoleBinding"},
		Namespace: "shop", Name: "readers"}
	body := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": "readers", "namespace": "shop"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}}}
	// A body the restore left unread holds its roleRef as the backup's JSON.
	unread := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": "readers", "namespace": "shop"},
		"roleRef":  jsontree.Raw(`{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"reader"}`)}}
	for i, resource := range []string{"rolebindings", "roles"} {
		notFound := apierrors.NewNotFound(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: resource}, "reader")
		err := bindingRefused(binding, []*unstructured.Unstructured{body, unread}[i], notFound)
		assert.EqualError(t, err, resource+`.rbac.authorization.k8s.io "reader" not found: the Role "reader" it binds is not there, `+
			`and the API server looks it up to check that the user restoring holds its rights, since that user may not bind it `+
			`(no bind or escalate on roles.rbac.authorization.k8s.io)`)
		assert.True(t, apierrors.IsNotFound(err))
	}

	roleGone := apierrors.NewNotFound(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}, "reader")
	namespaceGone := apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "shop")
	assert.Same(t, namespaceGone, bindingRefused(binding, body, namespaceGone))
	otherName := apierrors.NewNotFound(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}, "writer")
	assert.Same(t, otherName, bindingRefused(binding, body, otherName))
	configMap := &manifest.Item{Type: &manifest.Type{Version: "v1", Resource: "configmaps", Kind: "ConfigMap"}, Namespace: "shop", Name: "reader"}
	assert.Same(t, roleGone, bindingRefused(configMap, body, roleGone))
}

// A Namespace whose create the target forbids (a namespace's admin restoring into their
// own) but which the user may read is handled as one that exists, by the Existing
// policy, and what is in it is restored; one the user may not read either fails, named
// by the target's refusal.
func TestANamespaceTheUserMayReadButNotCreateIsAdopted(t *testing.T) {
	b := backupOf(t, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "uid-ns"}},
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "settings", "namespace": "shop", "uid": "uid-cm"}})
	for _, readable := range []bool{true, false} {
		_, tgt := cluster(t, memcluster.Options{})
		ctx := context.Background()
		_, err := tgt.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx,
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		forbid := func(steps []Step) []Step {
			i := slices.IndexFunc(steps, func(s Step) bool { return s.Name == StepCreate })
			return slices.Insert(steps, i, Step{Name: "namespace-admin", Run: func(_ context.Context, o *Object) error {
				if o.Item.Resource == "namespaces" {
					o.Client = namespaceAdmin{o.Client, readable}
				}
				return nil
			}})
		}
		rep, err := restoreAll(ctx, tgt, b, testOptions{Retry: fastRetry, Steps: forbid})
		require.NoError(t, err)
		results := byName(rep)
		if readable {
			assert.Equal(t, Adopted, results["namespaces/shop"].Status)
			assert.Equal(t, Restored, results["configmaps/settings"].Status)
			continue
		}
		assert.Equal(t, Failed, results["namespaces/shop"].Status)
		assert.Contains(t, results["namespaces/shop"].Reason, `namespaces is forbidden: User "alice" cannot create resource "namespaces"`)
	}
}

// namespaceAdmin is a client as a namespace's admin has it: Namespaces cannot be
// created, and are read only when readable.
type namespaceAdmin struct {
	dynamic.ResourceInterface
	readable bool
}

func (c namespaceAdmin) Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error) {
	return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "", errors.New(`User "alice" cannot create resource "namespaces" in API group "" at the cluster scope`))
}

func (c namespaceAdmin) Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error) {
	if !c.readable {
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, name, errors.New(`User "alice" cannot get resource "namespaces"`))
	}
	return c.ResourceInterface.Get(ctx, name, opts, sub...)
}
