package builtin

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/restoregraph/restoregraph/internal/jsontree"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// run executes the built-in action name on obj, as a restore does: an action that shares
// its item (plugin.ItemSharer) is given one that shares all below its top level and
// metadata with the backup's object, the others a deep copy.
func run(t *testing.T, name string, opts Options, obj string) *ria.ExecuteOutput {
	t.Helper()
	var reg plugin.Registry
	require.NoError(t, Register(&reg, opts))
	actions, err := reg.Actions()
	require.NoError(t, err)
	i := slices.IndexFunc(actions, func(a *plugin.Action) bool { return a.Name == name })
	require.GreaterOrEqual(t, i, 0)
	a := actions[i]
	backup := &unstructured.Unstructured{}
	require.NoError(t, json.Unmarshal([]byte(obj), &backup.Object))
	u := backup.DeepCopy()
	if a.SharesItem {
		u = &unstructured.Unstructured{Object: maps.Clone(backup.Object)}
		u.Object["metadata"] = runtime.DeepCopyJSONValue(backup.Object["metadata"])
	}
	// Its copies made by a restore's maker (ExecuteMaking), the same item.
	made := &madeMaps{}
	withMaker := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(u.Object)}
	outMade, err := a.ExecuteMaking(&ria.ExecuteInput{Item: withMaker, ItemFromBackup: backup, Restore: &ria.Restore{Name: "r"}}, made)
	require.NoError(t, err)
	out, err := a.Execute(&ria.ExecuteInput{Item: u, ItemFromBackup: backup, Restore: &ria.Restore{Name: "r"}})
	require.NoError(t, err)
	assert.Equal(t, out.UpdatedItem, outMade.UpdatedItem, "the same with the restore's maker")
	assert.Equal(t, out.AdditionalItems, outMade.AdditionalItems)
	if a.TakesRaw {
		// Given the backup's item itself, its top level but metadata left as their JSON
		// (jsontree.ObjectMapsUnread), it asks for the same items and returns the same
		// object, once decoded.
		top, maps, err := jsontree.ObjectMapsUnread([]byte(obj), "")
		require.NoError(t, err)
		defer maps.Drop()
		item := &unstructured.Unstructured{Object: top}
		outRaw, err := a.ExecuteMaking(&ria.ExecuteInput{Item: item, ItemFromBackup: item, Restore: &ria.Restore{Name: "r"}}, &madeMaps{})
		require.NoError(t, err)
		assert.Equal(t, out.AdditionalItems, outRaw.AdditionalItems, "the same items asked for from the JSON")
		data, err := json.Marshal(outRaw.UpdatedItem.Object)
		require.NoError(t, err)
		decoded := &unstructured.Unstructured{}
		require.NoError(t, json.Unmarshal(data, &decoded.Object))
		assert.Equal(t, out.UpdatedItem, decoded, "the same object from the JSON")
		if spec, ok := top["spec"].(jsontree.Raw); ok && !bytes.Contains(spec, []byte("-token-")) && !bytes.Contains(spec, []byte(`\`)) {
			assert.IsType(t, jsontree.Raw{}, outRaw.UpdatedItem.Object["spec"], "a spec without a legacy token is not decoded")
		}
	}
	// The item given is the one changed and returned; the backup's is left alone.
	assert.Same(t, u, out.UpdatedItem)
	want := &unstructured.Unstructured{}
	require.NoError(t, json.Unmarshal([]byte(obj), &want.Object))
	assert.Equal(t, want, backup)
	return out
}

// madeMaps is a plugin.MapMaker that lists the maps it makes.
type madeMaps []map[string]any

func (m *madeMaps) Map(n int) map[string]any {
	made := make(map[string]any, n)
	*m = append(*m, made)
	return made
}

// has reports whether x is one of the maps m made.
func (m *madeMaps) has(x any) bool {
	xm, ok := x.(map[string]any)
	return ok && slices.ContainsFunc(*m, func(y map[string]any) bool {
		return reflect.ValueOf(xm).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	})
}

// As kube-apiserver v1.37 wrote them (the shop fixture, and a claim bound by a provisioner).
const (
	nodePortService = `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web-public","namespace":"shop"},
	 "spec":{"clusterIP":"10.0.0.162","clusterIPs":["10.0.0.162"],"externalTrafficPolicy":"Cluster","ipFamilies":["IPv4"],
	  "ipFamilyPolicy":"SingleStack","ports":[{"nodePort":32615,"port":80,"protocol":"TCP","targetPort":80}],
	  "selector":{"app":"web"},"sessionAffinity":"None","type":"NodePort"}}`
	headlessService = `{"apiVersion":"v1","kind":"Service","metadata":{"name":"db","namespace":"shop"},
	 "spec":{"clusterIP":"None","clusterIPs":["None"],"ports":[{"port":5432,"protocol":"TCP","targetPort":5432}],"selector":{"app":"db"},"type":"ClusterIP"}}`
	boundPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"debug","namespace":"shop"},
	 "spec":{"nodeName":"node-a","priority":0,"serviceAccountName":"app","serviceAccount":"app",
	  "containers":[{"name":"debug","image":"busybox:1.37","volumeMounts":[
	   {"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","name":"app-token-x7k2p","readOnly":true},
	   {"mountPath":"/data","name":"data"}]}],
	  "volumes":[{"name":"app-token-x7k2p","secret":{"secretName":"app-token-x7k2p"}},{"name":"data","emptyDir":{}}]}}`
	generatedJob = `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"migrate","namespace":"shop",
	  "labels":{"batch.kubernetes.io/controller-uid":"b7ea","batch.kubernetes.io/job-name":"migrate","controller-uid":"b7ea","job-name":"migrate"}},
	 "spec":{"selector":{"matchLabels":{"batch.kubernetes.io/controller-uid":"b7ea"}},
	  "template":{"metadata":{"labels":{"batch.kubernetes.io/controller-uid":"b7ea","batch.kubernetes.io/job-name":"migrate","controller-uid":"b7ea","job-name":"migrate"}},
	   "spec":{"restartPolicy":"Never","containers":[{"name":"migrate","image":"busybox:1.37"}]}}}}`
	boundClaim = `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data-db-0","namespace":"shop",
	  "annotations":{"pv.kubernetes.io/bind-completed":"yes","pv.kubernetes.io/bound-by-controller":"yes",
	   "volume.beta.kubernetes.io/storage-provisioner":"rancher.io/local-path","volume.kubernetes.io/storage-provisioner":"rancher.io/local-path",
	   "volume.kubernetes.io/selected-node":"node-a","team":"db"}},
	 "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}},"storageClassName":"local-path",
	  "volumeMode":"Filesystem","volumeName":"pvc-5d1e"},"status":{"phase":"Bound"}}`
	boundVolume = `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pvc-5d1e"},
	 "spec":{"claimRef":{"apiVersion":"v1","kind":"PersistentVolumeClaim","name":"data-db-0","namespace":"shop","resourceVersion":"812","uid":"5d1e"},
	  "capacity":{"storage":"1Gi"},"hostPath":{"path":"/data/pvc-5d1e"}}}`
)

func TestService(t *testing.T) {
	out := run(t, Service, Options{}, nodePortService)
	spec := out.UpdatedItem.Object["spec"].(map[string]any)
	assert.NotContains(t, spec, "clusterIP")
	assert.NotContains(t, spec, "clusterIPs")
	assert.NotContains(t, spec["ports"].([]any)[0], "nodePort")
	assert.Equal(t, "NodePort", spec["type"])

	out = run(t, Service, Options{PreserveNodePorts: true}, nodePortService)
	assert.EqualValues(t, 32615, out.UpdatedItem.Object["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["nodePort"])

	out = run(t, Service, Options{}, headlessService)
	ip, _, _ := unstructured.NestedString(out.UpdatedItem.Object, "spec", "clusterIP")
	assert.Equal(t, "None", ip, "headless stays headless")
}

func TestPod(t *testing.T) {
	out := run(t, Pod, Options{}, boundPod)
	spec := out.UpdatedItem.Object["spec"].(map[string]any)
	assert.NotContains(t, spec, "nodeName")
	assert.NotContains(t, spec, "priority")
	vols := spec["volumes"].([]any)
	require.Len(t, vols, 1)
	assert.Equal(t, "data", vols[0].(map[string]any)["name"])
	mounts := spec["containers"].([]any)[0].(map[string]any)["volumeMounts"].([]any)
	require.Len(t, mounts, 1)
	assert.Equal(t, "data", mounts[0].(map[string]any)["name"])
	assert.Empty(t, out.AdditionalItems, "nothing it needs is in the backup")

	claimed := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"db-0","namespace":"shop"},
	 "spec":{"serviceAccountName":"app","priorityClassName":"high",
	  "containers":[{"name":"db","image":"postgres:17"}],
	  "volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"data-db-0"}},{"name":"tmp","emptyDir":{}}]}}`
	held := map[manifest.ID]bool{
		{Resource: "serviceaccounts", Namespace: "shop", Name: "app"}:              true,
		{Resource: "persistentvolumeclaims", Namespace: "shop", Name: "data-db-0"}: true,
		{Group: "scheduling.k8s.io", Resource: "priorityclasses", Name: "high"}:    true,
	}
	out = run(t, Pod, Options{InBackup: func(id manifest.ID) bool { return held[id] }}, claimed)
	assert.ElementsMatch(t, []ria.ResourceIdentifier{
		{GroupResource: schema.GroupResource{Resource: "serviceaccounts"}, Namespace: "shop", Name: "app"},
		{GroupResource: schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}, Name: "high"},
		{GroupResource: schema.GroupResource{Resource: "persistentvolumeclaims"}, Namespace: "shop", Name: "data-db-0"},
	}, out.AdditionalItems, "what the Pod needs is restored first")

	// As a scheduled Pod is backed up: its node and priority, a projected token, a
	// claim named twice (the last counts), a spec whose last member is one taken out.
	scheduled := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"db-1","namespace":"shop"},
	 "spec":{"serviceAccountName":"app","containers":[{"name":"db","image":"postgres:17","volumeMounts":[{"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","name":"kube-api-access-9k2lp","readOnly":true}]}],
	  "volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"old","claimName":"data-db-0"}},{"name":"kube-api-access-9k2lp","projected":{"sources":[{"serviceAccountToken":{"path":"token"}}]}},"odd"],
	  "priorityClassName":"high","nodeName":"node-b","priority":1000},"status":{"phase":"Running"}}`
	out = run(t, Pod, Options{InBackup: func(id manifest.ID) bool { return held[id] }}, scheduled)
	assert.Equal(t, []ria.ResourceIdentifier{
		{GroupResource: schema.GroupResource{Resource: "serviceaccounts"}, Namespace: "shop", Name: "app"},
		{GroupResource: schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}, Name: "high"},
		{GroupResource: schema.GroupResource{Resource: "persistentvolumeclaims"}, Namespace: "shop", Name: "data-db-0"},
	}, out.AdditionalItems)
	spec = out.UpdatedItem.Object["spec"].(map[string]any)
	assert.NotContains(t, spec, "nodeName")
	assert.NotContains(t, spec, "priority")
	assert.Len(t, spec["volumes"], 3)

	// A legacy token's name spelt with an escape is found, and taken out.
	escaped := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"old","namespace":"shop"},
	 "spec":{"nodeName":"node-a","containers":[{"name":"c","image":"busybox:1.37","volumeMounts":[{"mountPath":"/t","name":"default\u002dtoken-abcde"}]}],
	  "volumes":[{"name":"default\u002dtoken-abcde","secret":{"secretName":"legacy"}}]}}`
	out = run(t, Pod, Options{}, escaped)
	spec = out.UpdatedItem.Object["spec"].(map[string]any)
	assert.Empty(t, spec["volumes"])
	assert.Empty(t, spec["containers"].([]any)[0].(map[string]any)["volumeMounts"])
}

func TestJob(t *testing.T) {
	out := run(t, Job, Options{}, generatedJob)
	obj := out.UpdatedItem.Object
	_, has, _ := unstructured.NestedMap(obj, "spec", "selector")
	assert.False(t, has, "the target generates the selector")
	for _, path := range [][]string{{"spec", "template", "metadata", "labels"}, {"metadata", "labels"}} {
		labels, _, _ := unstructured.NestedStringMap(obj, path...)
		assert.Equal(t, map[string]string{"batch.kubernetes.io/job-name": "migrate", "job-name": "migrate"}, labels, path)
	}
	manual := `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"m"},"spec":{"manualSelector":true,"selector":{"matchLabels":{"app":"m"}}}}`
	sel, _, _ := unstructured.NestedStringMap(run(t, Job, Options{}, manual).UpdatedItem.Object, "spec", "selector", "matchLabels")
	assert.Equal(t, map[string]string{"app": "m"}, sel, "a manual selector is the user's")
}

func TestPersistentVolumeClaim(t *testing.T) {
	out := run(t, PersistentVolumeClaim, Options{}, boundClaim)
	assert.Equal(t, map[string]string{"team": "db"}, out.UpdatedItem.GetAnnotations(), "only the user's annotation is left")
	_, has, _ := unstructured.NestedString(out.UpdatedItem.Object, "spec", "volumeName")
	assert.False(t, has, "the volume is not in the backup: the claim binds anew")
	assert.Empty(t, out.AdditionalItems)

	inBackup := func(id manifest.ID) bool { return id == manifest.ID{Resource: "persistentvolumes", Name: "pvc-5d1e"} }
	out = run(t, PersistentVolumeClaim, Options{InBackup: inBackup}, boundClaim)
	name, _, _ := unstructured.NestedString(out.UpdatedItem.Object, "spec", "volumeName")
	assert.Equal(t, "pvc-5d1e", name)
	assert.Equal(t, []ria.ResourceIdentifier{{GroupResource: schema.GroupResource{Resource: "persistentvolumes"}, Name: "pvc-5d1e"}},
		out.AdditionalItems, "the volume is restored first")
}

func TestPersistentVolume(t *testing.T) {
	out := run(t, PersistentVolume, Options{}, boundVolume)
	ref, _, _ := unstructured.NestedStringMap(out.UpdatedItem.Object, "spec", "claimRef")
	assert.Equal(t, map[string]string{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": "data-db-0", "namespace": "shop"}, ref)
}

func TestDisabledByName(t *testing.T) {
	var reg plugin.Registry
	require.NoError(t, Register(&reg, Options{}, Pod, Job))
	actions, err := reg.Actions()
	require.NoError(t, err)
	var names []string
	for _, a := range actions {
		names = append(names, a.Name)
	}
	assert.Equal(t, []string{Service, PersistentVolumeClaim, PersistentVolume}, names)
}

// TestCopiesAreMadeByTheMaker: the maps Service and Pod put in place of the backup's are
// made by the MapMaker a restore gives them, which takes them back once the object is
// restored; none of the backup's maps is changed (run).
func TestCopiesAreMadeByTheMaker(t *testing.T) {
	var reg plugin.Registry
	require.NoError(t, Register(&reg, Options{}))
	actions, err := reg.Actions()
	require.NoError(t, err)
	byName := map[string]*plugin.Action{}
	for _, a := range actions {
		require.NotNil(t, a.ExecuteMaking, a.Name)
		byName[a.Name] = a
	}
	execute := func(name, obj string) (*unstructured.Unstructured, *madeMaps) {
		backup := &unstructured.Unstructured{}
		require.NoError(t, json.Unmarshal([]byte(obj), &backup.Object))
		item := &unstructured.Unstructured{Object: maps.Clone(backup.Object)}
		made := &madeMaps{}
		out, err := byName[name].ExecuteMaking(&ria.ExecuteInput{Item: item, ItemFromBackup: backup, Restore: &ria.Restore{Name: "r"}}, made)
		require.NoError(t, err)
		return out.UpdatedItem, made
	}
	svc, made := execute(Service, nodePortService)
	spec := svc.Object["spec"].(map[string]any)
	assert.True(t, made.has(spec), "the Service's spec")
	assert.True(t, made.has(spec["ports"].([]any)[0]), "its port without a node port")
	assert.Len(t, *made, 2)

	pod, made := execute(Pod, boundPod)
	spec = pod.Object["spec"].(map[string]any)
	assert.True(t, made.has(spec), "the Pod's spec")
	assert.True(t, made.has(spec["containers"].([]any)[0]), "its container without the token's mount")
	assert.Len(t, *made, 2)
}

// Service and Pod, which a restore of applications meets most, share their item with the
// backup's object (run checks that they leave it alone); the others are given a copy.
func TestSharers(t *testing.T) {
	var reg plugin.Registry
	require.NoError(t, Register(&reg, Options{}))
	actions, err := reg.Actions()
	require.NoError(t, err)
	sharing := map[string]bool{}
	for _, a := range actions {
		sharing[a.Name] = a.SharesItem
	}
	assert.Equal(t, map[string]bool{Service: true, Pod: true, Job: false, PersistentVolumeClaim: false, PersistentVolume: false}, sharing)
}
