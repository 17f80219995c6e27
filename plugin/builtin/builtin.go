// Package builtin holds the restore item actions every restore runs unless told not to:
// what makes an object written by the source cluster's API server and controllers
// acceptable to another cluster. Each is an ordinary RestoreItemAction, registered by
// name in a plugin.Registry, and each can be left out by name. Each changes the item
// it is given and returns it, as Velero's own actions may: a restore gives an action
// its working copy of the object, never the backup's. Service and Pod, which every
// application's restore meets many times, change nothing below the item's top level
// and metadata but by putting a new map or slice in its place (plugin.ItemSharer): the
// restore gives them an item that shares the rest with the backup's object, not a deep
// copy of it. Pod also takes a spec the restore left as its JSON (plugin.RawTaker): it
// reads what it needs from the bytes and leaves them as they are but for what it takes
// out, decoding the spec only where a legacy token must go.
//
//   - Service: clusterIP and clusterIPs cleared unless headless (None), so that the
//     target allocates from its own range; node ports and healthCheckNodePort cleared
//     unless PreserveNodePorts.
//   - Pod: spec.nodeName (the source's node), spec.priority (set by admission from the
//     priority class, refused when it disagrees) and the legacy <serviceaccount>-token-*
//     secret volumes and their mounts (the target has other secrets). Its
//     ServiceAccount, claims and priority class, when the backup holds them, are restored
//     first, as additional items: the API server refuses a Pod whose ServiceAccount does
//     not exist.
//   - Job: the generated selector and the controller-uid labels (legacy controller-uid
//     and batch.kubernetes.io/controller-uid, in the selector, the template and the Job)
//     removed, so that the target generates its own from the Job's new UID.
//   - PersistentVolumeClaim: the binding and provisioning annotations removed, and
//     spec.volumeName too when the backup does not hold that volume; a volume it does
//     hold is restored first, as an additional item.
//   - PersistentVolume: spec.claimRef's uid and resourceVersion removed, so that the
//     volume binds to the restored claim by name.
package builtin

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/restoregraph/restoregraph/internal/jsontree"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The names of the built-in actions.
const (
	Service               = "restoregraph.dev/service"
	Pod                   = "restoregraph.dev/pod"
	Job                   = "restoregraph.dev/job"
	PersistentVolumeClaim = "restoregraph.dev/persistentvolumeclaim"
	PersistentVolume      = "restoregraph.dev/persistentvolume"
)

// Names lists the built-in actions in the order they are registered.
var Names = []string{Service, Pod, Job, PersistentVolumeClaim, PersistentVolume}

// Options tune the built-in actions.
type Options struct {
	// PreserveNodePorts keeps Services' node ports, as Velero's --preserve-nodeports.
	PreserveNodePorts bool
	// InBackup reports whether the backup holds an object; nil holds nothing.
	InBackup func(manifest.ID) bool
}

// Register adds the built-in actions to r, but those named in disabled.
func Register(r *plugin.Registry, opts Options, disabled ...string) error {
	if opts.InBackup == nil {
		opts.InBackup = func(manifest.ID) bool { return false }
	}
	actions := map[string]action{
		Service: {"services", func(in *ria.ExecuteInput, mk plugin.MapMaker) (*ria.ExecuteOutput, error) {
			return service(in, opts, mk)
		}, true, false},
		Pod: {"pods", func(in *ria.ExecuteInput, mk plugin.MapMaker) (*ria.ExecuteOutput, error) {
			return pod(in, opts, mk)
		}, true, true},
		Job: {"jobs.batch", func(in *ria.ExecuteInput, _ plugin.MapMaker) (*ria.ExecuteOutput, error) { return job(in) }, false, false},
		PersistentVolumeClaim: {"persistentvolumeclaims", func(in *ria.ExecuteInput, _ plugin.MapMaker) (*ria.ExecuteOutput, error) {
			return claim(in, opts)
		}, false, false},
		PersistentVolume: {"persistentvolumes", func(in *ria.ExecuteInput, _ plugin.MapMaker) (*ria.ExecuteOutput, error) { return volume(in) }, false, false},
	}
	for _, name := range Names {
		if slices.Contains(disabled, name) {
			continue
		}
		if err := r.Register(name, plugin.V1, actions[name]); err != nil {
			return err
		}
	}
	return nil
}

// action is a built-in RestoreItemAction v1: the resource it applies to, what it does
// (with the maps it makes made by a MapMaker), whether it replaces, never changes, what
// it changes below the item's top level and metadata, and whether it takes values
// there left as their JSON.
type action struct {
	resource string
	execute  func(*ria.ExecuteInput, plugin.MapMaker) (*ria.ExecuteOutput, error)
	replaces bool
	raw      bool
}

// ExecuteMaking implements plugin.MapMakerUser.
func (a action) ExecuteMaking(in *ria.ExecuteInput, mk plugin.MapMaker) (*ria.ExecuteOutput, error) {
	return a.execute(in, mk)
}

// newMaps is the MapMaker of a call through Execute: make's.
type newMaps struct{}

func (newMaps) Map(n int) map[string]any { return make(map[string]any, n) }

// copyMap returns a copy of m's members, in a map made by mk.
func copyMap(mk plugin.MapMaker, m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := mk.Map(len(m))
	maps.Copy(out, m)
	return out
}

var _ plugin.MapMakerUser = action{}

// SharesItem implements plugin.ItemSharer.
func (a action) SharesItem() bool { return a.replaces }

// TakesRaw implements plugin.RawTaker.
func (a action) TakesRaw() bool { return a.raw }

// ForgetsItems implements plugin.ItemForgetter: no built-in action keeps an item.
func (action) ForgetsItems() bool { return true }

func (a action) AppliesTo() (ria.ResourceSelector, error) {
	return ria.ResourceSelector{IncludedResources: []string{a.resource}}, nil
}

func (a action) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	return a.execute(in, newMaps{})
}

// service replaces what it changes: the item may share it (action.replaces).
func service(in *ria.ExecuteInput, opts Options, mk plugin.MapMaker) (*ria.ExecuteOutput, error) {
	obj := in.Item
	spec, _ := obj.Object["spec"].(map[string]any)
	if spec == nil {
		return ria.NewExecuteOutput(obj), nil
	}
	spec = copyMap(mk, spec)
	obj.Object["spec"] = spec
	if ip, _ := spec["clusterIP"].(string); ip != "None" {
		delete(spec, "clusterIP")
		delete(spec, "clusterIPs")
	}
	if !opts.PreserveNodePorts {
		delete(spec, "healthCheckNodePort")
		if ports, ok := spec["ports"].([]any); ok {
			ports = slices.Clone(ports)
			for i, p := range ports {
				if m, ok := p.(map[string]any); ok {
					if _, set := m["nodePort"]; set {
						m = copyMap(mk, m)
						delete(m, "nodePort")
						ports[i] = m
					}
				}
			}
			spec["ports"] = ports
		}
	}
	return ria.NewExecuteOutput(obj), nil
}

// pod replaces what it changes: the item may share it (action.replaces).
func pod(in *ria.ExecuteInput, opts Options, mk plugin.MapMaker) (*ria.ExecuteOutput, error) {
	obj := in.Item
	out := ria.NewExecuteOutput(obj)
	needs := func(gr schema.GroupResource, namespace, name string) {
		if name != "" && opts.InBackup(manifest.ID{Group: gr.Group, Resource: gr.Resource, Namespace: namespace, Name: name}) {
			out.AdditionalItems = append(out.AdditionalItems, ria.ResourceIdentifier{GroupResource: gr, Namespace: namespace, Name: name})
		}
	}
	ns := in.ItemFromBackup.GetNamespace()
	if raw, ok := obj.Object["spec"].(jsontree.Raw); ok {
		// A spec the restore left as its JSON (plugin.RawTaker) is read from its bytes,
		// and decoded only where a legacy token may have to be taken out of it.
		var alloc func(int) []byte // the spec without its node, in a slice taken back with the maps
		if bm, ok := mk.(plugin.BytesMaker); ok {
			alloc = bm.Bytes
		}
		spec, err := podSpecRaw(raw, ns, needs, alloc)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: spec: %w", ns, obj.GetName(), err)
		}
		if spec != nil {
			obj.Object["spec"] = spec
			return out, nil
		}
		m, err := jsontree.Object(raw)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: spec: %w", ns, obj.GetName(), err)
		}
		obj.Object["spec"] = m
	}
	if sa, _, _ := unstructured.NestedString(obj.Object, "spec", "serviceAccountName"); sa != "" {
		needs(schema.GroupResource{Resource: "serviceaccounts"}, ns, sa)
	}
	pc, _, _ := unstructured.NestedString(obj.Object, "spec", "priorityClassName")
	needs(schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}, "", pc)
	spec, _ := obj.Object["spec"].(map[string]any)
	vols, _ := spec["volumes"].([]any)
	for _, v := range vols {
		if v, ok := v.(map[string]any); ok {
			claim, _, _ := unstructured.NestedString(v, "persistentVolumeClaim", "claimName")
			needs(schema.GroupResource{Resource: "persistentvolumeclaims"}, ns, claim)
		}
	}
	if spec == nil {
		return out, nil
	}
	spec = copyMap(mk, spec)
	obj.Object["spec"] = spec
	delete(spec, "nodeName")
	delete(spec, "priority")
	sa, _ := spec["serviceAccountName"].(string)
	if sa == "" {
		sa = "default"
	}
	token := sa + "-token-" // once, not for each volume and mount
	legacyToken := func(name string) bool { return strings.HasPrefix(name, token) }
	if vols != nil {
		spec["volumes"] = dropNamed(vols, legacyToken)
	}
	for _, field := range []string{"containers", "initContainers", "ephemeralContainers"} {
		containers, _ := spec[field].([]any)
		var replaced []any // containers, once one of them has lost a mount
		for i, c := range containers {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			mounts, ok := m["volumeMounts"].([]any)
			if !ok {
				continue
			}
			if kept := dropNamed(mounts, legacyToken); len(kept) < len(mounts) {
				if replaced == nil {
					replaced = slices.Clone(containers)
					spec[field] = replaced
				}
				m = copyMap(mk, m)
				m["volumeMounts"] = kept
				replaced[i] = m
			}
		}
	}
	return out, nil
}

// podSpecRaw does what pod does to a Pod's spec kept as its JSON: it asks for the
// ServiceAccount, the priority class and the claims the spec names (needs, in pod's
// order), and returns the spec without nodeName and priority, the rest as the backup
// has it. It returns nil, having asked for nothing, when the spec may hold a legacy
// token's volume or mount: the token's prefix is in its bytes, or an escape that could
// spell it is in its volumes (a mount names one of them, as the API server checks).
// The caller decodes it then, and does what pod does to a decoded spec. The spec
// returned, when it is not raw itself, is written into a slice made by alloc
// (jsontree.OmitInto).
func podSpecRaw(raw jsontree.Raw, ns string, needs func(gr schema.GroupResource, namespace, name string), alloc func(int) []byte) (jsontree.Raw, error) {
	var sa, pc string
	var vols []byte
	// What is kept, and what is read, in one pass.
	kept, err := jsontree.OmitInto(raw, []string{"nodeName", "priority"}, func(name, value []byte) error {
		switch string(name) { // the last of a name given twice, as a decoded spec keeps it
		case "serviceAccountName":
			sa = rawString(value)
		case "priorityClassName":
			pc = rawString(value)
		case "volumes":
			vols = value
		}
		return nil
	}, alloc)
	if err != nil {
		return nil, err
	}
	token := sa
	if token == "" {
		token = "default"
	}
	if bytes.Contains(raw, []byte(token+"-token-")) || bytes.IndexByte(vols, '\\') >= 0 {
		return nil, nil
	}
	needs(schema.GroupResource{Resource: "serviceaccounts"}, ns, sa)
	needs(schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}, "", pc)
	if len(vols) > 0 && vols[0] == '[' {
		err := jsontree.Elements(vols, func(v []byte) error {
			if v[0] != '{' {
				return nil
			}
			var claim string
			err := jsontree.Members(v, func(name, value []byte) error {
				if string(name) != "persistentVolumeClaim" {
					return nil
				}
				claim = "" // the last one given, as a decoded volume keeps it
				if value[0] != '{' {
					return nil
				}
				return jsontree.Members(value, func(name, value []byte) error {
					if string(name) == "claimName" {
						claim = rawString(value)
					}
					return nil
				})
			})
			needs(schema.GroupResource{Resource: "persistentvolumeclaims"}, ns, claim)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return kept, nil
}

// rawString is the string a JSON value stands for, or "" when it is not a string, as
// unstructured.NestedString reads a member that is not one.
func rawString(value []byte) string {
	s, ok := jsontree.Unquote(nil, value)
	if !ok {
		return ""
	}
	return string(s)
}

// dropNamed returns the elements of list whose "name" does not satisfy drop: list
// itself when none does, a new slice otherwise.
func dropNamed(list []any, drop func(string) bool) []any {
	dropped := func(e any) bool {
		m, ok := e.(map[string]any)
		name, _ := m["name"].(string)
		return ok && drop(name)
	}
	if !slices.ContainsFunc(list, dropped) {
		return list
	}
	out := make([]any, 0, len(list)-1)
	for _, e := range list {
		if !dropped(e) {
			out = append(out, e)
		}
	}
	return out
}

// controllerUIDLabels are the labels the Job controller sets from the Job's UID.
var controllerUIDLabels = []string{"controller-uid", "batch.kubernetes.io/controller-uid"}

func job(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	obj := in.Item
	if manual, _, _ := unstructured.NestedBool(obj.Object, "spec", "manualSelector"); manual {
		return ria.NewExecuteOutput(obj), nil // the user's own selector
	}
	unstructured.RemoveNestedField(obj.Object, "spec", "selector")
	for _, path := range [][]string{{"spec", "template", "metadata", "labels"}, {"metadata", "labels"}} {
		labels, ok, _ := unstructured.NestedStringMap(obj.Object, path...)
		if !ok {
			continue
		}
		for _, l := range controllerUIDLabels {
			delete(labels, l)
		}
		unstructured.SetNestedStringMap(obj.Object, labels, path...)
	}
	return ria.NewExecuteOutput(obj), nil
}

// claimAnnotations are what binding and provisioning wrote on a claim in the source.
var claimAnnotations = []string{
	"pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller",
	"volume.kubernetes.io/storage-provisioner", "volume.beta.kubernetes.io/storage-provisioner",
	"volume.kubernetes.io/selected-node",
}

func claim(in *ria.ExecuteInput, opts Options) (*ria.ExecuteOutput, error) {
	obj := in.Item
	if ann := obj.GetAnnotations(); ann != nil {
		for _, a := range claimAnnotations {
			delete(ann, a)
		}
		obj.SetAnnotations(ann)
	}
	out := ria.NewExecuteOutput(obj)
	volumeName, _, _ := unstructured.NestedString(obj.Object, "spec", "volumeName")
	if volumeName == "" {
		return out, nil
	}
	if !opts.InBackup(manifest.ID{Resource: "persistentvolumes", Name: volumeName}) {
		unstructured.RemoveNestedField(obj.Object, "spec", "volumeName")
		return out, nil
	}
	out.AdditionalItems = []ria.ResourceIdentifier{{GroupResource: schema.GroupResource{Resource: "persistentvolumes"}, Name: volumeName}}
	return out, nil
}

func volume(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	obj := in.Item
	unstructured.RemoveNestedField(obj.Object, "spec", "claimRef", "uid")
	unstructured.RemoveNestedField(obj.Object, "spec", "claimRef", "resourceVersion")
	return ria.NewExecuteOutput(obj), nil
}
