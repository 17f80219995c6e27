package restore

import (
	"fmt"
	"strings"

	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/manifest"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DefaultNonRestorable are the resources a restore leaves out unless the Selection says
// otherwise, as Velero does: what belongs to the source cluster's machines (nodes,
// csinodes, volumeattachments), what records its past (events), and Velero's own
// bookkeeping.
var DefaultNonRestorable = []schema.GroupResource{
	{Resource: "nodes"}, {Resource: "events"}, {Group: "events.k8s.io", Resource: "events"},
	{Group: "storage.k8s.io", Resource: "csinodes"}, {Group: "storage.k8s.io", Resource: "volumeattachments"},
	{Group: "velero.io", Resource: "backups"}, {Group: "velero.io", Resource: "restores"},
	{Group: "velero.io", Resource: "backuprepositories"}, {Group: "velero.io", Resource: "resticrepositories"},
	{Group: "velero.io", Resource: "podvolumebackups"}, {Group: "velero.io", Resource: "podvolumerestores"},
	{Group: "velero.io", Resource: "datauploads"}, {Group: "velero.io", Resource: "datadownloads"},
}

// The names under which a plan leaves objects out (ObjectResult.SkippedBy);
// ControllerManaged is also a Rule that Disabled.Rules switches off.
const (
	NonRestorable     = "restoregraph.dev/non-restorable"
	ControllerManaged = "restoregraph.dev/controller-managed"
)

// rootCAConfigMap is the ConfigMap the root CA publisher writes in every namespace.
const rootCAConfigMap = "kube-root-ca.crt"

// Labels the Kubernetes controllers put on what they manage.
const (
	endpointSliceManagedBy = "endpointslice.kubernetes.io/managed-by"
	endpointsManagedBy     = "endpoints.kubernetes.io/managed-by"
)

// exclusion says why the plan leaves an object to the target instead of restoring it:
// the rule's name and the reason; "" restores it.
type exclusion struct{ by, reason string }

// exclude decides for every object of the backup whether it is left out: by the
// filter (nil for none), then by the plan's own rules.
func exclude(backup Backup, opts Selection, f *filter.Filter) map[*manifest.Item]exclusion {
	out := map[*manifest.Item]exclusion{}
	if f != nil {
		for it, reason := range f.Apply(backup.Manifest()) {
			out[it] = exclusion{Filtered, reason}
		}
	}
	nonRestorable := map[schema.GroupResource]bool{}
	for _, gr := range opts.NonRestorable {
		nonRestorable[gr] = true
	}
	managed := !opts.Disabled.Rule(ControllerManaged)
	m := backup.Manifest()
	for _, it := range m.Items() {
		if _, done := out[it]; done {
			continue
		}
		if nonRestorable[it.GroupResource()] {
			out[it] = exclusion{NonRestorable, it.GroupResource().String() + " is not restored (Selection.NonRestorable)"}
			continue
		}
		if !managed {
			continue
		}
		if reason := controllerManaged(backup, it); reason != "" {
			out[it] = exclusion{ControllerManaged, reason}
		}
	}
	return out
}

// controllerManaged says why the target's own controllers, not the restore, make it.
func controllerManaged(backup Backup, it *manifest.Item) string {
	switch it.GroupResource() {
	case schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}:
		if by := it.Labels.Get(endpointSliceManagedBy); strings.HasSuffix(by, ".k8s.io") {
			return "left to the target's controller " + by
		}
	case schema.GroupResource{Resource: "configmaps"}:
		// The root CA publisher writes the target's CA into every namespace and
		// rewrites it when it differs: the source's CA restored would be wrong until
		// then, and the restore's copy rewritten under it.
		if it.Name == rootCAConfigMap {
			return "left to the target's controller root-ca-cert-publisher: it holds the target's CA"
		}
	case schema.GroupResource{Resource: "endpoints"}:
		if by := it.Labels.Get(endpointsManagedBy); by != "" {
			return "left to the target's controller " + by
		}
		// Older clusters do not label them: the Endpoints of a Service with a selector
		// are the endpoints controller's.
		svc, ok := backup.Manifest().Get(manifest.ID{Resource: "services", Namespace: it.Namespace, Name: it.Name})
		if !ok {
			return ""
		}
		data, err := backup.Body(svc.GroupResource(), svc.Version, svc.Namespace, svc.Name)
		if err != nil {
			return ""
		}
		obj := &unstructured.Unstructured{}
		if obj.UnmarshalJSON(data) != nil {
			return ""
		}
		if sel, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "selector"); len(sel) > 0 {
			return fmt.Sprintf("left to the target's endpoints controller: Service %s has a selector", it.Name)
		}
	}
	return ""
}

// StatefulSetClaims names the plan rule that restores a StatefulSet's claims before it
// (graph.StatefulSetClaims), so that its controller does not make them first.
const StatefulSetClaims = "restoregraph.dev/statefulset-claims"

// NamespaceDefaults names the rule that adopts what every namespace already has.
const NamespaceDefaults = "restoregraph.dev/namespace-defaults"

// namespaceDefault reports whether the target's controllers make the object in every
// namespace (its default ServiceAccount, kube-root-ca.crt): one that exists is adopted
// whatever the Existing policy, as no conflict.
func namespaceDefault(it *manifest.Item) bool {
	switch {
	case it.Namespace == "":
		return false
	case it.Group == "" && it.Resource == "serviceaccounts" && it.Name == "default":
		return true
	case it.Group == "" && it.Resource == "configmaps" && it.Name == rootCAConfigMap:
		return true
	}
	return false
}
