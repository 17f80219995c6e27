// Package restoreitemaction holds what every version of the RestoreItemAction plugin
// interface shares: the input and output of Execute, the identity of an additional
// item, the restore request, and the selector a plugin applies to. The interfaces
// themselves live in the version packages v1 and v2.
package restoreitemaction

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// ResourceIdentifier names an object: group-resource, namespace ("" when
// cluster-scoped) and name.
type ResourceIdentifier struct {
	schema.GroupResource
	Namespace string
	Name      string
}

func (r ResourceIdentifier) String() string {
	if r.Namespace == "" {
		return r.GroupResource.String() + "/" + r.Name
	}
	return r.GroupResource.String() + "/" + r.Namespace + "/" + r.Name
}

// Restore is the restore request a plugin sees.
type Restore struct {
	Name   string
	Backup string
	// Options the caller passes through to plugins.
	Options map[string]string
	// Namespace, UID and Spec are the Velero Restore the restore carries out, for
	// Velero's own actions, which read them: its namespace (Velero's, where the backup's
	// Backup object is), a UID that stays the same whenever the restore is run again
	// (Velero's CSI actions name the VolumeSnapshots they restore after it), and its
	// spec as Velero's Restore writes it (restorePVs, namespaceMapping, ...).
	Namespace string
	UID       types.UID
	Spec      map[string]any
}

// ExecuteInput is what Execute is given.
type ExecuteInput struct {
	// Item is the object about to be restored, after earlier plugins changed it.
	Item *unstructured.Unstructured
	// ItemFromBackup is the object as it was in the backup.
	ItemFromBackup *unstructured.Unstructured
	Restore        *Restore
}

// ExecuteOutput is what Execute returns.
type ExecuteOutput struct {
	// UpdatedItem is the object to restore (or to pass to the next plugin).
	UpdatedItem *unstructured.Unstructured
	// AdditionalItems are restored before the item.
	AdditionalItems []ResourceIdentifier
	// SkipRestore leaves the item out of the restore.
	SkipRestore bool
	// WaitForAdditionalItems asks that, once the additional items are restored, the
	// plugin's AreAdditionalItemsReady be polled before the item is restored.
	WaitForAdditionalItems bool
	// AdditionalItemsReadyTimeout bounds that wait; zero means the restore's default.
	AdditionalItemsReadyTimeout time.Duration
	// OperationID, from a v2 action that implements v2.AsyncAction, names an operation
	// Execute started and that goes on after it returns (a volume's data being copied):
	// the item is not ready, and its dependents do not start, until the operation
	// completes.
	OperationID string
}

// NewExecuteOutput returns an output that restores item unchanged.
func NewExecuteOutput(item *unstructured.Unstructured) *ExecuteOutput {
	return &ExecuteOutput{UpdatedItem: item}
}

// WithoutRestore marks the output to skip the item.
func (o *ExecuteOutput) WithoutRestore() *ExecuteOutput {
	o.SkipRestore = true
	return o
}

// WithItemsWait asks for the additional items to be waited for.
func (o *ExecuteOutput) WithItemsWait() *ExecuteOutput {
	o.WaitForAdditionalItems = true
	return o
}

// ResourceSelector says which items a plugin applies to, as Velero users know it.
// Resources are written resource or resource.group ("pods", "deployments.apps"), "*"
// for all; empty included lists mean all. Namespace filters do not apply to
// cluster-scoped items.
type ResourceSelector struct {
	IncludedResources  []string
	ExcludedResources  []string
	IncludedNamespaces []string
	ExcludedNamespaces []string
	LabelSelector      string
}

// Matcher is a parsed ResourceSelector.
type Matcher struct {
	sel    ResourceSelector
	labels labels.Selector
}

// Compile parses the label selector once; the error names it.
func (s ResourceSelector) Compile() (*Matcher, error) {
	m := &Matcher{sel: s, labels: labels.Everything()}
	if s.LabelSelector != "" {
		sel, err := labels.Parse(s.LabelSelector)
		if err != nil {
			return nil, err
		}
		m.labels = sel
	}
	return m, nil
}

// Matches reports whether the selector applies to an item.
func (m *Matcher) Matches(gr schema.GroupResource, namespace string, itemLabels labels.Labels) bool {
	s := m.sel
	if !included(s.IncludedResources, s.ExcludedResources, func(p string) bool { return resourceMatches(p, gr) }) {
		return false
	}
	if namespace != "" && !included(s.IncludedNamespaces, s.ExcludedNamespaces, func(p string) bool { return p == "*" || p == namespace }) {
		return false
	}
	if itemLabels == nil {
		itemLabels = labels.Set{}
	}
	return m.labels.Matches(itemLabels)
}

func included(in, ex []string, match func(string) bool) bool {
	if slices.ContainsFunc(ex, match) {
		return false
	}
	return len(in) == 0 || slices.ContainsFunc(in, match)
}

func resourceMatches(pattern string, gr schema.GroupResource) bool {
	if pattern == "*" {
		return true
	}
	resource, group, hasGroup := strings.Cut(pattern, ".")
	if resource != gr.Resource {
		return false
	}
	return !hasGroup || group == gr.Group
}
