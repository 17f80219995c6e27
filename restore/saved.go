package restore

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/hook"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/modifier"
	"github.com/restoregraph/restoregraph/versionselect"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// PlanFormat names the format of a saved plan, the "format" field of its JSON. A plan
// in another format is refused by ReadPlan.
const PlanFormat = "restoregraph.dev/plan/v1"

// BackupRef names the backup a plan was made of.
type BackupRef struct {
	Name     string `json:"name,omitempty"`
	Location string `json:"location,omitempty"`
	// Digest is "sha256:" and the SHA-256 of what the backup's manifest records of every
	// object (group, resource, version, namespace, name, UID, labels, annotations,
	// owners) and of the versions it holds per group-resource: another backup, or this
	// one with an object more, less or relabelled, has another digest. Bodies are not
	// read for it, so that a plan of a million objects still reads none.
	Digest string `json:"digest"`
}

// digest is m's BackupRef.Digest.
func digest(m *manifest.Manifest) string {
	h := sha256.New()
	w := bufio.NewWriterSize(h, 64<<10)
	field := func(s string) { w.WriteString(s); w.WriteByte(0) }
	for _, r := range m.Resources() {
		field(r.GroupResource.String())
		field(strings.Join(r.Versions, ","))
		field(r.Preferred)
	}
	w.WriteByte('\n')
	for _, it := range m.Items() {
		field(it.Group)
		field(it.Resource)
		field(it.Version)
		field(it.Namespace)
		field(it.Name)
		field(string(it.UID))
		for _, pairs := range []manifest.Pairs{it.Labels, it.Annotations} {
			for _, kv := range pairs {
				field(kv.Key)
				field(kv.Value)
			}
			w.WriteByte(1)
		}
		for _, o := range it.OwnerUIDs {
			field(string(o))
		}
		w.WriteByte('\n')
	}
	w.Flush()
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ErrPlanChanged is wrapped by a *PlanChangedError.
var ErrPlanChanged = errors.New("the plan no longer holds")

// PlanChangedError says what changed between a plan and now: another backup, a version
// the target no longer serves, objects or plugins that differ. Changes lists each,
// most telling first.
type PlanChangedError struct {
	Changes []string
}

func (e *PlanChangedError) Error() string {
	const shown = 10
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %d change(s): ", ErrPlanChanged, len(e.Changes))
	b.WriteString(strings.Join(e.Changes[:min(len(e.Changes), shown)], "; "))
	if len(e.Changes) > shown {
		fmt.Fprintf(&b, "; and %d more", len(e.Changes)-shown)
	}
	return b.String()
}

func (e *PlanChangedError) Unwrap() error { return ErrPlanChanged }

// SavedPlan is a plan as WriteJSON wrote it and ReadPlan read it: what it was made of
// (the backup, the selection) and what it chose (versions, plugins, objects). Open makes
// it a Plan to apply, again.
type SavedPlan struct {
	Format    string          `json:"format"`
	Backup    BackupRef       `json:"backup"`
	Selection Selection       `json:"selection"`
	Versions  []VersionChoice `json:"versions"`
	Plugins   []PlannedPlugin `json:"plugins"`
	Volumes   []Volume        `json:"volumes,omitempty"`
	Objects   []PlannedObject `json:"objects"`
}

// ReadPlan reads a plan that Plan.WriteJSON wrote.
func ReadPlan(r io.Reader) (*SavedPlan, error) {
	var s SavedPlan
	if err := json.NewDecoder(bufio.NewReaderSize(r, 256<<10)).Decode(&s); err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	if s.Format != PlanFormat {
		return nil, fmt.Errorf("read plan: format %q, want %q (a plan is written by plan -o json or Plan.WriteJSON)", s.Format, PlanFormat)
	}
	if s.Backup.Digest == "" {
		return nil, errors.New("read plan: it names no backup digest")
	}
	return &s, nil
}

// Open makes the saved plan again, from backup, against target, with its selection and
// ext (extensions are code, and not saved), and checks that it is the plan that was
// saved: the same backup (its digest), the same version for every group-resource, the
// same plugins, the same objects restored at the same versions into the same places.
// When anything differs it returns the plan as it is now with a *PlanChangedError that
// lists what changed: applying that plan instead is the caller's explicit choice
// (restoregraph restore --replan).
func (s *SavedPlan) Open(ctx context.Context, backup Backup, target Target, ext Extensions) (*Plan, error) {
	p, err := NewPlan(ctx, backup, target, PlanOptions{BackupName: s.Backup.Name, BackupLocation: s.Backup.Location,
		Selection: s.Selection, Extensions: ext, Volumes: s.Volumes})
	if err != nil {
		return nil, err
	}
	var changes []string
	if s.Backup.Digest != p.source.Digest {
		changes = append(changes, fmt.Sprintf("the backup is not the one planned: its digest was %s, it is %s", s.Backup.Digest, p.source.Digest))
	}
	changes = append(changes, versionChanges(s.Versions, p.Versions)...)
	changes = append(changes, pluginChanges(s.Plugins, p.Plugins)...)
	changes = append(changes, objectChanges(s.Objects, p.Objects())...)
	if len(changes) > 0 {
		return p, &PlanChangedError{Changes: changes}
	}
	return p, nil
}

// recheck says what the target serves differently now from when p was made: a version
// it chose that the target no longer serves, or a CRD it relied on that changed.
func (p *Plan) recheck(ctx context.Context, target Target) error {
	now, _, err := versionselect.PlanBackup(ctx, p.backup, target.Discovery, versionselect.Options{Priorities: p.sel.Priorities, Strict: p.sel.StrictVersions})
	if now == nil {
		return fmt.Errorf("the target's discovery: %w", err)
	}
	var current []VersionChoice
	for _, c := range now.Choices {
		current = append(current, choiceOf(c, ""))
	}
	if changes := versionChanges(p.Versions, current); len(changes) > 0 {
		return &PlanChangedError{Changes: changes}
	}
	return nil
}

func choiceGR(c VersionChoice) string {
	return schema.GroupResource{Group: c.Group, Resource: c.Resource}.String()
}

// versionChanges lists the group-resources whose version was and is chosen differently.
func versionChanges(was, is []VersionChoice) []string {
	now := map[string]VersionChoice{}
	for _, c := range is {
		now[choiceGR(c)] = c
	}
	var out []string
	for _, c := range was {
		gr := choiceGR(c)
		n, ok := now[gr]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: planned at %s, no longer in the backup", gr, c.Version))
		case c.Rule != string(versionselect.RuleNotServed) && n.Rule == string(versionselect.RuleNotServed):
			out = append(out, fmt.Sprintf("%s: planned at %s, the target no longer serves it: %s", gr, c.Version, n.Explanation))
		case n.Version != c.Version:
			out = append(out, fmt.Sprintf("%s: planned at %s, it would now be %s: %s", gr, c.Version, n.Version, n.Explanation))
		case slices.Contains(c.TargetVersions, c.Version) && !slices.Contains(n.TargetVersions, n.Version):
			out = append(out, fmt.Sprintf("%s: planned at %s, which the target served; it serves %s now", gr, c.Version, orNone(n.TargetVersions)))
		}
		delete(now, gr)
	}
	for _, gr := range slices.Sorted(maps.Keys(now)) {
		out = append(out, fmt.Sprintf("%s: not planned, in the backup now", gr))
	}
	return out
}

// pluginChanges lists the actions planned and not run now, and run now and not planned.
func pluginChanges(was, is []PlannedPlugin) []string {
	key := func(p PlannedPlugin) string { return p.Name + " (" + p.Version + ")" }
	now := map[string]bool{}
	for _, p := range is {
		now[key(p)] = true
	}
	var out []string
	for _, p := range was {
		if !now[key(p)] {
			out = append(out, fmt.Sprintf("plugin %s was planned and is not registered now", key(p)))
		}
		delete(now, key(p))
	}
	for _, k := range slices.Sorted(maps.Keys(now)) {
		out = append(out, fmt.Sprintf("plugin %s runs now and was not planned", k))
	}
	return out
}

// plannedAs is what a plan decides of one object: where and at which version it is
// restored, or why not.
func plannedAs(o PlannedObject) string {
	ns, name := o.InTarget()
	what := fmt.Sprintf("%s %s at %s", schema.GroupResource{Group: o.Group, Resource: o.Resource}, qualifiedName(ns, name), o.Version)
	if o.Excluded != "" {
		what += " (left out by " + o.ExcludedBy + ")"
	}
	if o.Volume != "" {
		what += " (volume: " + string(o.Volume) + ")"
	}
	return what
}

// objectChanges lists the objects planned otherwise, or not at all, now.
func objectChanges(was []PlannedObject, is func(func(PlannedObject) bool)) []string {
	planned := make(map[types.UID]PlannedObject, len(was))
	for _, o := range was {
		planned[o.UID] = o
	}
	var out []string
	for o := range is {
		w, ok := planned[o.UID]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("object %s (uid %s) was not planned", plannedAs(o), o.UID))
		case plannedAs(w) != plannedAs(o):
			out = append(out, fmt.Sprintf("object %s was planned as %s", plannedAs(o), plannedAs(w)))
		}
		delete(planned, o.UID)
	}
	for _, o := range slices.SortedFunc(maps.Values(planned), func(a, b PlannedObject) int { return strings.Compare(string(a.UID), string(b.UID)) }) {
		out = append(out, fmt.Sprintf("object %s (uid %s) was planned and is not in the backup now", plannedAs(o), o.UID))
	}
	return out
}

// selectionJSON is a Selection as a saved plan writes it.
type selectionJSON struct {
	IncludeNamespaces       []string            `json:"includeNamespaces,omitempty"`
	ExcludeNamespaces       []string            `json:"excludeNamespaces,omitempty"`
	IncludeResources        []string            `json:"includeResources,omitempty"`
	ExcludeResources        []string            `json:"excludeResources,omitempty"`
	IncludeClusterResources *bool               `json:"includeClusterResources,omitempty"`
	LabelSelector           string              `json:"labelSelector,omitempty"`
	OrLabelSelectors        []string            `json:"orLabelSelectors,omitempty"`
	NamespaceMappings       map[string]string   `json:"namespaceMappings,omitempty"`
	Priorities              map[string][]string `json:"versionPriorities,omitempty"`
	StrictVersions          bool                `json:"strictVersions,omitempty"`
	RestoreStatus           *StatusSelection    `json:"restoreStatus,omitempty"`
	NonRestorable           []string            `json:"nonRestorable"`
	PreserveNodePorts       bool                `json:"preserveNodePorts,omitempty"`
	Existing                Existing            `json:"existing,omitempty"`
	Disable                 []string            `json:"disable,omitempty"`
	RestorePVs              *bool               `json:"restorePVs,omitempty"`
	Modifiers               *modifier.Modifiers `json:"resourceModifiers,omitempty"`
	Hooks                   *hook.Spec          `json:"hooks,omitempty"`
	Order                   *Order              `json:"restoreOrder,omitempty"`
}

// MarshalJSON writes s with group-resources as "resource.group" and the label selector
// as its string.
func (s Selection) MarshalJSON() ([]byte, error) {
	f := s.Filter
	j := selectionJSON{IncludeNamespaces: f.IncludeNamespaces, ExcludeNamespaces: f.ExcludeNamespaces, IncludeResources: f.IncludeResources,
		ExcludeResources: f.ExcludeResources, IncludeClusterResources: f.IncludeClusterResources,
		NamespaceMappings: s.NamespaceMappings, StrictVersions: s.StrictVersions, PreserveNodePorts: s.PreserveNodePorts,
		Existing: s.Existing, Disable: s.Disabled.Names(), RestorePVs: s.RestorePVs, NonRestorable: []string{}, Modifiers: s.Modifiers, RestoreStatus: s.RestoreStatus, Hooks: s.Hooks, Order: s.Order}
	if f.Selector != nil && !f.Selector.Empty() {
		j.LabelSelector = f.Selector.String()
	}
	for _, sel := range f.OrSelectors {
		j.OrLabelSelectors = append(j.OrLabelSelectors, sel.String())
	}
	if len(s.Priorities) > 0 {
		j.Priorities = map[string][]string{}
		for gr, vs := range s.Priorities {
			j.Priorities[gr.String()] = vs
		}
	}
	for _, gr := range s.NonRestorable {
		j.NonRestorable = append(j.NonRestorable, gr.String())
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (s *Selection) UnmarshalJSON(data []byte) error {
	var j selectionJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*s = Selection{Filter: filter.Spec{IncludeNamespaces: j.IncludeNamespaces, ExcludeNamespaces: j.ExcludeNamespaces,
		IncludeResources: j.IncludeResources, ExcludeResources: j.ExcludeResources, IncludeClusterResources: j.IncludeClusterResources},
		NamespaceMappings: j.NamespaceMappings, StrictVersions: j.StrictVersions, PreserveNodePorts: j.PreserveNodePorts,
		Existing: j.Existing, Disabled: DisabledByName(j.Disable...), RestorePVs: j.RestorePVs, NonRestorable: []schema.GroupResource{}, Modifiers: j.Modifiers, RestoreStatus: j.RestoreStatus, Hooks: j.Hooks, Order: j.Order}
	if j.LabelSelector != "" {
		sel, err := labels.Parse(j.LabelSelector)
		if err != nil {
			return fmt.Errorf("selection: labelSelector: %w", err)
		}
		s.Filter.Selector = sel
	}
	for _, or := range j.OrLabelSelectors {
		sel, err := labels.Parse(or)
		if err != nil {
			return fmt.Errorf("selection: orLabelSelectors: %w", err)
		}
		s.Filter.OrSelectors = append(s.Filter.OrSelectors, sel)
	}
	if len(j.Priorities) > 0 {
		s.Priorities = versionselect.Priorities{}
		for gr, vs := range j.Priorities {
			s.Priorities[schema.ParseGroupResource(gr)] = vs
		}
	}
	for _, gr := range j.NonRestorable {
		s.NonRestorable = append(s.NonRestorable, schema.ParseGroupResource(gr))
	}
	return nil
}

func orNone(vs []string) string {
	if len(vs) == 0 {
		return "none"
	}
	return strings.Join(vs, ", ")
}
