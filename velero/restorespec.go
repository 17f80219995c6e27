package velero

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/yaml"

	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/hook"
	"github.com/restoregraph/restoregraph/restore"
)

// RestoreSpec is a Velero Restore object as restoregraph runs it: what to restore
// (Selection), of which backup, under which name. Every field of Velero's spec is
// either carried here or refused by ReadRestore; none is ignored.
type RestoreSpec struct {
	// Name is the Restore's name; Namespace Velero's, where its backup is found.
	Name, Namespace string
	// Backup or Schedule names the backup as Velero does: spec.backupName, or the newest
	// of spec.scheduleName's.
	Backup, Schedule string
	// Selection is spec's filters, namespace mapping, restoreStatus, preserveNodePorts and
	// existingResourcePolicy. Its modifiers are read from ModifierConfigMap.
	Selection restore.Selection
	// ModifierConfigMap is the name of spec.resourceModifier's ConfigMap, in Namespace.
	ModifierConfigMap string
	// ItemOperationTimeout is spec.itemOperationTimeout; zero when not set.
	ItemOperationTimeout time.Duration
	// UploaderConfig is spec.uploaderConfig: how the data movers write the files of the
	// volumes they fill (Velero's CSI claim action copies it into each DataDownload).
	UploaderConfig *velerov1.UploaderConfigForRestore
}

// SpecFieldError names a field of a Velero Restore that restoregraph refuses, and why.
type SpecFieldError struct {
	Field  string // as Velero's YAML spells it: spec.hooks
	Reason string
}

func (e *SpecFieldError) Error() string { return e.Field + ": " + e.Reason }

// ReadRestore reads a Velero Restore object, YAML or JSON, as `velero restore create
// -o yaml` or `kubectl get restore -o yaml` writes it. A field restoregraph does not
// support is an error naming it (a *SpecFieldError), and so is a field Velero does not
// know; the object's status, the outcome of Velero's run, is not read.
func ReadRestore(data []byte) (*RestoreSpec, error) {
	var r velerov1.Restore
	if err := yaml.UnmarshalStrict(data, &r); err != nil {
		return nil, fmt.Errorf("velero restore: %w", err)
	}
	if r.APIVersion != velerov1.SchemeGroupVersion.String() || r.Kind != "Restore" {
		return nil, fmt.Errorf("velero restore: apiVersion %q, kind %q: want %s, Restore", r.APIVersion, r.Kind, velerov1.SchemeGroupVersion)
	}
	s := r.Spec
	out := &RestoreSpec{Name: r.Name, Namespace: r.Namespace, Backup: s.BackupName, Schedule: s.ScheduleName,
		ItemOperationTimeout: s.ItemOperationTimeout.Duration, UploaderConfig: s.UploaderConfig}
	if (s.BackupName == "") == (s.ScheduleName == "") {
		return nil, &SpecFieldError{"spec.backupName", "name the backup by spec.backupName or spec.scheduleName, one of them"}
	}
	if err := unsupported(s); err != nil {
		return nil, err
	}
	sel := restore.Selection{NamespaceMappings: s.NamespaceMapping, RestorePVs: s.RestorePVs, Filter: filter.Spec{
		IncludeNamespaces: s.IncludedNamespaces, ExcludeNamespaces: s.ExcludedNamespaces,
		IncludeResources: s.IncludedResources, ExcludeResources: s.ExcludedResources, IncludeClusterResources: s.IncludeClusterResources}}
	var err error
	if s.LabelSelector != nil {
		if sel.Filter.Selector, err = metav1.LabelSelectorAsSelector(s.LabelSelector); err != nil {
			return nil, &SpecFieldError{"spec.labelSelector", err.Error()}
		}
	}
	for i, ls := range s.OrLabelSelectors {
		or, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			return nil, &SpecFieldError{fmt.Sprintf("spec.orLabelSelectors[%d]", i), err.Error()}
		}
		sel.Filter.OrSelectors = append(sel.Filter.OrSelectors, or)
	}
	if sel.Filter.Selector != nil && !sel.Filter.Selector.Empty() && len(sel.Filter.OrSelectors) > 0 {
		return nil, &SpecFieldError{"spec.orLabelSelectors", "spec.labelSelector is given too: Velero takes one of them"}
	}
	if s.RestoreStatus != nil {
		sel.RestoreStatus = &restore.StatusSelection{IncludedResources: s.RestoreStatus.IncludedResources, ExcludedResources: s.RestoreStatus.ExcludedResources}
	}
	if s.PreserveNodePorts != nil {
		sel.PreserveNodePorts = *s.PreserveNodePorts
	}
	if sel.Existing, err = restore.ParseExisting(string(s.ExistingResourcePolicy)); err != nil || s.ExistingResourcePolicy == "adopt" || s.ExistingResourcePolicy == "fail" {
		return nil, &SpecFieldError{"spec.existingResourcePolicy", fmt.Sprintf("%q: Velero's policies are none and update", s.ExistingResourcePolicy)}
	}
	if sel.Hooks, err = hooks(s.Hooks); err != nil {
		return nil, err
	}
	if m := s.ResourceModifier; m != nil {
		if !strings.EqualFold(m.Kind, "configmap") || m.APIGroup != nil && *m.APIGroup != "" {
			return nil, &SpecFieldError{"spec.resourceModifier", fmt.Sprintf("kind %q: resource modifiers are read from a ConfigMap", m.Kind)}
		}
		out.ModifierConfigMap = m.Name
	}
	out.Selection = sel
	return out, nil
}

// hooks reads spec.hooks. Velero applies them to Pods alone, whatever their resources
// say: resources that name no Pods, and an init hook's timeout (which Velero does not
// enforce either), are refused.
func hooks(h velerov1.RestoreHooks) (*hook.Spec, error) {
	if len(h.Resources) == 0 {
		return nil, nil
	}
	out := &hook.Spec{}
	for i, r := range h.Resources {
		field := fmt.Sprintf("spec.hooks.resources[%d]", i)
		pods := func(names []string) bool {
			return slices.ContainsFunc(names, func(n string) bool { return n == "*" || n == "pods" || n == "pod" || n == "po" })
		}
		if len(r.IncludedResources) > 0 && !pods(r.IncludedResources) || pods(r.ExcludedResources) {
			return nil, &SpecFieldError{field + ".includedResources", "restore hooks apply to Pods only"}
		}
		res := hook.Resource{Name: r.Name, IncludedNamespaces: r.IncludedNamespaces, ExcludedNamespaces: r.ExcludedNamespaces}
		if r.LabelSelector != nil {
			sel, err := metav1.LabelSelectorAsSelector(r.LabelSelector)
			if err != nil {
				return nil, &SpecFieldError{field + ".labelSelector", err.Error()}
			}
			res.LabelSelector = sel.String()
		}
		for j, ph := range r.PostHooks {
			var h hook.Hook
			if e := ph.Exec; e != nil {
				h.Exec = &hook.Exec{Container: e.Container, Command: e.Command, OnError: hook.OnError(e.OnError),
					ExecTimeout: e.ExecTimeout.Duration, WaitTimeout: e.WaitTimeout.Duration, WaitForReady: e.WaitForReady != nil && *e.WaitForReady}
			}
			if in := ph.Init; in != nil {
				if in.Timeout.Duration != 0 {
					return nil, &SpecFieldError{fmt.Sprintf("%s.postHooks[%d].init.timeout", field, j), "not supported (Velero does not enforce it either)"}
				}
				h.Init = &hook.Init{}
				for k, raw := range in.InitContainers {
					var c map[string]any
					if err := json.Unmarshal(raw.Raw, &c); err != nil {
						return nil, &SpecFieldError{fmt.Sprintf("%s.postHooks[%d].init.initContainers[%d]", field, j, k), err.Error()}
					}
					h.Init.InitContainers = append(h.Init.InitContainers, c)
				}
			}
			res.PostHooks = append(res.PostHooks, h)
		}
		out.Resources = append(out.Resources, res)
	}
	if err := out.Check(); err != nil {
		return nil, &SpecFieldError{"spec.hooks", err.Error()}
	}
	return out, nil
}

// unsupported refuses the fields of s restoregraph does not do.
func unsupported(s velerov1.RestoreSpec) error {
	switch {
	case s.ItemOperationTimeout.Duration < 0:
		return &SpecFieldError{"spec.itemOperationTimeout", "negative"}
	case s.ResourcePolicy != nil:
		return &SpecFieldError{"spec.resourcePolicy", "volume policies are not supported"}
	case s.UploaderConfig != nil && s.UploaderConfig.ParallelFilesDownload < 0:
		return &SpecFieldError{"spec.uploaderConfig.parallelFilesDownload", "negative"}
	}
	return nil
}

// SpecOf is r in the fields of Velero's Restore spec, for a Restore that records a
// restore in Velero or that plugins read: ReadRestore's inverse. Of r it reads
// Selection, ModifierConfigMap (in Velero's namespace; "" for none),
// ItemOperationTimeout (the run's RunOptions.ItemOperationTimeout) and UploaderConfig.
// What Velero's spec cannot say (the existing-object policy fail, version priorities)
// is left out.
func SpecOf(r RestoreSpec) (map[string]any, error) {
	sel, f := r.Selection, r.Selection.Filter
	s := velerov1.RestoreSpec{IncludedNamespaces: f.IncludeNamespaces, ExcludedNamespaces: f.ExcludeNamespaces,
		IncludedResources: f.IncludeResources, ExcludedResources: f.ExcludeResources, IncludeClusterResources: f.IncludeClusterResources,
		NamespaceMapping: sel.NamespaceMappings, ItemOperationTimeout: metav1.Duration{Duration: r.ItemOperationTimeout},
		UploaderConfig: r.UploaderConfig}
	var err error
	if f.Selector != nil && !f.Selector.Empty() {
		if s.LabelSelector, err = labelSelectorOf(f.Selector); err != nil {
			return nil, err
		}
	}
	for _, or := range f.OrSelectors {
		ls, err := labelSelectorOf(or)
		if err != nil {
			return nil, err
		}
		s.OrLabelSelectors = append(s.OrLabelSelectors, ls)
	}
	if rs := sel.RestoreStatus; rs != nil {
		s.RestoreStatus = &velerov1.RestoreStatusSpec{IncludedResources: rs.IncludedResources, ExcludedResources: rs.ExcludedResources}
	}
	if sel.PreserveNodePorts {
		s.PreserveNodePorts = &sel.PreserveNodePorts
	}
	s.RestorePVs = sel.RestorePVs
	if sel.Existing == restore.Update {
		s.ExistingResourcePolicy = velerov1.PolicyTypeUpdate
	}
	if sel.Hooks != nil {
		for _, r := range sel.Hooks.Resources {
			vr := velerov1.RestoreResourceHookSpec{Name: r.Name, IncludedNamespaces: r.IncludedNamespaces, ExcludedNamespaces: r.ExcludedNamespaces}
			if r.LabelSelector != "" {
				if vr.LabelSelector, err = metav1.ParseToLabelSelector(r.LabelSelector); err != nil {
					return nil, err
				}
			}
			for _, h := range r.PostHooks {
				var vh velerov1.RestoreResourceHook
				if e := h.Exec; e != nil {
					vh.Exec = &velerov1.ExecRestoreHook{Container: e.Container, Command: e.Command, OnError: velerov1.HookErrorMode(e.OnError),
						ExecTimeout: metav1.Duration{Duration: e.ExecTimeout}, WaitTimeout: metav1.Duration{Duration: e.WaitTimeout}}
					if e.WaitForReady {
						vh.Exec.WaitForReady = &e.WaitForReady
					}
				}
				if in := h.Init; in != nil {
					vh.Init = &velerov1.InitRestoreHook{}
					for _, c := range in.InitContainers {
						raw, err := json.Marshal(c)
						if err != nil {
							return nil, err
						}
						vh.Init.InitContainers = append(vh.Init.InitContainers, runtime.RawExtension{Raw: raw})
					}
				}
				vr.PostHooks = append(vr.PostHooks, vh)
			}
			s.Hooks.Resources = append(s.Hooks.Resources, vr)
		}
	}
	if r.ModifierConfigMap != "" {
		s.ResourceModifier = &corev1.TypedLocalObjectReference{Kind: "configmap", Name: r.ModifierConfigMap}
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(&s)
}

// labelSelectorOf is sel as a LabelSelector, which says each of its requirements but >
// and < (what metav1.ParseToLabelSelector refuses of a selector's string, != included,
// is said as NotIn).
func labelSelectorOf(sel labels.Selector) (*metav1.LabelSelector, error) {
	reqs, _ := sel.Requirements()
	ls := &metav1.LabelSelector{}
	for _, r := range reqs {
		e := metav1.LabelSelectorRequirement{Key: r.Key(), Values: r.ValuesUnsorted()}
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals:
			if ls.MatchLabels == nil {
				ls.MatchLabels = map[string]string{}
			}
			ls.MatchLabels[r.Key()] = e.Values[0]
			continue
		case selection.In:
			e.Operator = metav1.LabelSelectorOpIn
		case selection.NotEquals, selection.NotIn:
			e.Operator = metav1.LabelSelectorOpNotIn
		case selection.Exists:
			e.Operator, e.Values = metav1.LabelSelectorOpExists, nil
		case selection.DoesNotExist:
			e.Operator, e.Values = metav1.LabelSelectorOpDoesNotExist, nil
		default:
			return nil, fmt.Errorf("label selector %q: %s cannot be said in Velero's Restore", sel, r.Operator())
		}
		ls.MatchExpressions = append(ls.MatchExpressions, e)
	}
	return ls, nil
}
