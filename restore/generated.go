package restore

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// generatedFields are fields the API server or a controller fills in on create that
// cannot change afterwards, and that the restore leaves out of what it creates so that
// the target fills them in anew: a Job's selector and the labels it selects its Pods by
// (its own UID), a Service's cluster IPs, the volume a claim is bound to, the node a
// Pod was scheduled to.
var generatedFields = map[schema.GroupResource][][]string{
	{Group: "batch", Resource: "jobs"}: {
		{"spec", "selector"},
		{"spec", "template", "metadata", "labels", "controller-uid"},
		{"spec", "template", "metadata", "labels", "batch.kubernetes.io/controller-uid"},
	},
	{Resource: "services"}:               {{"spec", "clusterIP"}, {"spec", "clusterIPs"}},
	{Resource: "persistentvolumeclaims"}: {{"spec", "volumeName"}},
	{Resource: "pods"}:                   {{"spec", "nodeName"}},
}

// keepGenerated copies into body, the update of an object that exists in the target,
// the generated fields that body leaves out and the live object has: an update without
// them is refused (a Job's "spec.selector: Required value", "field is immutable").
func keepGenerated(gr schema.GroupResource, body, live *unstructured.Unstructured) {
	for _, path := range generatedFields[gr] {
		if _, found, _ := unstructured.NestedFieldNoCopy(body.Object, path...); found {
			continue
		}
		v, found, _ := unstructured.NestedFieldCopy(live.Object, path...)
		if !found {
			continue
		}
		unstructured.SetNestedField(body.Object, v, path...)
	}
}
