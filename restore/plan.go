package restore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/graph"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/modifier"
	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"github.com/restoregraph/restoregraph/readiness"
	"github.com/restoregraph/restoregraph/versionselect"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Backup is what a restore reads: a manifest (its items, and the versions held per
// group-resource) and object bodies. *archive.Backup satisfies it; so does anything that
// pairs a manifest.Builder's manifest with the bodies it was built from.
type Backup interface {
	Manifest() *manifest.Manifest
	Body(gr schema.GroupResource, version, namespace, name string) ([]byte, error)
}

// bodyAppender is a Backup that appends a body to the caller's buffer (*archive.Backup
// does): a restore's workers then read each body into a buffer they use again, where
// Body would make a new one for each, a gigabyte over a million objects.
type bodyAppender interface {
	AppendBody(dst []byte, gr schema.GroupResource, version, namespace, name string) ([]byte, error)
}

// layout is what a backup that knows its directory layout says of where a version lies.
type layout interface {
	Dir(gr schema.GroupResource, version string) string
}

// VersionChoice is the version chosen for one group-resource, and why.
type VersionChoice struct {
	Group          string   `json:"group"`
	Resource       string   `json:"resource"`
	Version        string   `json:"version"`
	Dir            string   `json:"dir,omitempty"` // in the backup's layout, when it has one
	Rule           string   `json:"rule"`
	Explanation    string   `json:"explanation"`
	SourceVersions []string `json:"sourceVersions"`
	TargetVersions []string `json:"targetVersions"`
	TargetFromCRD  string   `json:"targetFromCRD,omitempty"`
	// InvalidCRD says why the backup's CRD cannot serve a resource the target lacks.
	InvalidCRD string `json:"invalidCRD,omitempty"`
}

// Dependency is one edge into an object: what it waits for and why.
type Dependency struct {
	UID    types.UID `json:"uid"`
	Reason string    `json:"reason"`
}

// ObjectRef names an object of the backup in plans and reports: its source UID, group,
// resource, kind, namespace and name, and the version it is restored at.
type ObjectRef struct {
	UID       types.UID `json:"uid"`
	Group     string    `json:"group"`
	Resource  string    `json:"resource"`
	Kind      string    `json:"kind"`
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name"`
	Version   string    `json:"version"`
	// TargetNamespace is the namespace it is restored into, when a namespace mapping
	// moves it; TargetName the name of a Namespace a mapping renames.
	TargetNamespace string `json:"targetNamespace,omitempty"`
	TargetName      string `json:"targetName,omitempty"`
}

func refOf(it *manifest.Item, version string, mappings map[string]string) ObjectRef {
	ref := ObjectRef{UID: it.UID, Group: it.Group, Resource: it.Resource, Kind: it.Kind, Namespace: it.Namespace, Name: it.Name, Version: version}
	if dst, ok := mappings[it.Namespace]; ok && it.Namespace != "" {
		ref.TargetNamespace = dst
	}
	if dst, ok := mappings[it.Name]; ok && isNamespace(it) {
		ref.TargetName = dst
	}
	return ref
}

func isNamespace(it *manifest.Item) bool { return it.Group == "" && it.Resource == "namespaces" }

// InTarget returns where the object is in the target: its namespace and name there.
func (r ObjectRef) InTarget() (namespace, name string) {
	namespace, name = r.Namespace, r.Name
	if r.TargetNamespace != "" {
		namespace = r.TargetNamespace
	}
	if r.TargetName != "" {
		name = r.TargetName
	}
	return namespace, name
}

// PlannedObject is one object of the plan, in restore order.
type PlannedObject struct {
	ObjectRef
	Level     int          `json:"level"`
	DependsOn []Dependency `json:"dependsOn"`
	// Folded lists the other group-resources the object was listed under in the backup
	// (events under events and events.events.k8s.io): it is restored once.
	Folded []string `json:"folded,omitempty"`
	// Excluded says why the object is left to the target instead of restored, and
	// ExcludedBy which rule says so.
	Excluded   string `json:"excluded,omitempty"`
	ExcludedBy string `json:"excludedBy,omitempty"`
	// Volume is how the data of a PersistentVolume, or of a claim's volume, comes back;
	// VolumeFileSystem for a Pod whose volumes are filled.
	Volume VolumeMethod `json:"volume,omitempty"`
	// Gate says of a claim whether the Pods that mount it wait until it is Bound, and
	// why; of an object whose dependents wait until it is healthy, why they do.
	Gate string `json:"gate,omitempty"`
	// Modifiers are the resource modifier rules that apply to the object by its
	// group-resource, namespace, name and labels in the backup; a Conditional one also
	// has matches, which only its body answers when it is restored.
	Modifiers []modifier.Candidate `json:"modifiers,omitempty"`
}

// PlannedCycle is a dependency cycle: its objects and the kinds of its edges.
type PlannedCycle struct {
	UIDs  []types.UID `json:"uids"`
	Edges []string    `json:"edges"`
	Text  string      `json:"text"`
}

// Plan is what a restore will do, computed without writing anything: the version of
// every group-resource, every object with what it waits for and why, what is left out
// and why, the plugins that run, the critical path, cycles and warnings. NewPlan makes
// one; Apply restores exactly it; WriteJSON saves it and ReadPlan reads it back.
type Plan struct {
	Versions     []VersionChoice `json:"versions"`
	CriticalPath []types.UID     `json:"criticalPath"`
	Cycles       []PlannedCycle  `json:"cycles"`
	Blocked      []types.UID     `json:"blocked"`
	Warnings     []string        `json:"warnings"`
	// Plugins are the restore item actions that run, in order: the built-in ones, then
	// Extensions.Plugins', with the interface version each runs at and what it applies
	// to.
	Plugins []PlannedPlugin `json:"plugins"`
	// Volumes is what the backup's records said of its volumes (PlanOptions.Volumes).
	Volumes []Volume `json:"volumes,omitempty"`

	source   BackupRef
	sel      Selection
	ext      Extensions
	backup   Backup
	graph    *graph.Graph
	manifest *manifest.Manifest
	objects  int // the graph's nodes that are objects, not barriers
	versions *versionselect.Plan
	// through is the copy a folded object is restored as, where it is not the manifest's
	// own (the target does not serve that group-resource, but serves another copy's).
	through  map[types.UID]*manifest.Item
	excluded map[*manifest.Item]exclusion
	actions  []*plugin.Action
	status   *statusFilter // the resources whose status is restored
	volumes  volumePlan
	gates    map[*manifest.Item]claimGate // the restored claims'
	// ready are the objects whose dependents wait until they are healthy, not only
	// made: the backends of webhooks and APIServices, what a user's order puts first.
	ready map[*manifest.Item]readyGate
}

// Backup names the backup the plan was made of: its name, where it is kept, and its
// digest.
func (p *Plan) Backup() BackupRef { return p.source }

// Selection is what the plan restores of its backup, with its defaults filled in.
func (p *Plan) Selection() Selection { return p.sel }

// FillsPodVolumes reports whether the restore fills the volumes of a Pod it makes
// through Extensions.PodVolumes (VolumeFileSystem).
func (p *Plan) FillsPodVolumes() bool { return len(p.volumes.filled) > 0 }

// PlannedPlugin is a restore item action of the plan.
type PlannedPlugin struct {
	Name      string               `json:"name"`
	Version   string               `json:"version"`
	AppliesTo ria.ResourceSelector `json:"appliesTo"`
}

// restored iterates the objects the restore makes, by node: every item the plan does
// not leave to the target.
func (p *Plan) restored() iter.Seq2[int64, *manifest.Item] {
	return func(yield func(int64, *manifest.Item) bool) {
		for id := range int64(p.graph.Len()) {
			it := p.item(id)
			if it == nil {
				continue
			}
			if _, out := p.excluded[p.graph.NodeAt(id).Item]; out {
				continue
			}
			if !yield(id, it) {
				return
			}
		}
	}
}

// operation is what the restore touches, for admission: every object it makes, named as
// in the target (after the filter, the plan's exclusions and the namespace mappings). It
// writes them, but for the Namespaces when the Existing policy is Adopt: those it needs
// to exist and never changes when they do, so two restores into one namespace that make
// different objects in it run together.
func (p *Plan) operation(name string) admission.Operation {
	existing := p.sel.Existing
	// A Namespace that is adopted, not made, is read; everything else is written. One
	// pass: the writes go straight into their set, the few reads into a slice.
	var reads []manifest.ID
	writes := manifest.CollectSet(p.graph.Len(), func(yield func(manifest.ID) bool) {
		for _, it := range p.restored() {
			ns, n := refOf(it, "", p.sel.NamespaceMappings).InTarget()
			id := manifest.ID{Group: it.Group, Resource: it.Resource, Namespace: ns, Name: n}
			if isNamespace(it) && existing == Adopt {
				reads = append(reads, id)
			} else if !yield(id) {
				return
			}
		}
	})
	return admission.Operation{ID: name, Kind: "restore", Writes: writes, Reads: manifest.NewSet(reads...)}
}

// item returns what node id restores: its item, or the copy it is restored through;
// nil for barriers.
func (p *Plan) item(id int64) *manifest.Item {
	it := p.graph.NodeAt(id).Item
	if it == nil {
		return nil
	}
	if t, ok := p.through[it.UID]; ok {
		return t
	}
	return it
}

// DOT renders the plan's graph for Graphviz.
func (p *Plan) DOT() ([]byte, error) { return p.graph.DOT("restore") }

// Conflicts returns the running or waiting operations that applying the plan would wait
// for, through opts.Admitter (none without one). It writes nothing.
func (p *Plan) Conflicts(ctx context.Context, opts RunOptions) ([]admission.Conflict, error) {
	if opts.Admitter == nil {
		return nil, nil
	}
	if a, ok := opts.Admitter.(admission.Idler); ok {
		// Nothing live: no conflict, and no need to make the operation's sets.
		if idle, err := a.Idle(ctx); err != nil || idle {
			return nil, err
		}
	}
	opts = opts.withDefaults(p.source.Name)
	return opts.Admitter.Conflicts(ctx, p.operation(opts.Name))
}

// NewPlan plans the restore of backup into target, reading the target's discovery only.
// Version conflicts in strict mode, a filter that names what neither the backup nor the
// target knows, and discovery failures are errors; cycles and malformed annotations are
// warnings, and the plan covers everything they do not block.
func NewPlan(ctx context.Context, backup Backup, target Target, opts PlanOptions) (*Plan, error) {
	sel, ext := opts.Selection.withDefaults(), opts.Extensions.withDefaults()
	if err := sel.Hooks.Check(); err != nil {
		return nil, err
	}
	disc := &onceDiscovery{d: target.Discovery}
	var f *filter.Filter
	var status *statusFilter
	if !sel.Filter.Empty() || sel.RestoreStatus != nil {
		c := catalog(ctx, backup, disc)
		var err error
		if !sel.Filter.Empty() {
			if f, err = sel.Filter.Resolve(c); err != nil {
				return nil, err
			}
		}
		if status, err = sel.RestoreStatus.resolve(c); err != nil {
			return nil, fmt.Errorf("restore status: %w", err)
		}
	}
	vplan, discWarning, err := versionselect.PlanBackup(ctx, backup, disc, versionselect.Options{Priorities: sel.Priorities, Strict: sel.StrictVersions})
	if vplan == nil {
		return nil, err
	}
	if err != nil {
		return nil, err // strict mode: no common version
	}
	m := backup.Manifest()
	// The digest reads every item once: on a core of its own while the graph is built.
	digested := make(chan string, 1)
	go func() { digested <- digest(m) }()
	p := &Plan{versions: vplan, CriticalPath: []types.UID{}, Cycles: []PlannedCycle{}, Blocked: []types.UID{}, Warnings: []string{},
		source: BackupRef{Name: opts.BackupName, Location: opts.BackupLocation}, sel: sel, ext: ext, backup: backup, status: status}
	if discWarning != nil {
		p.Warnings = append(p.Warnings, discWarning.Error())
	}
	p.excluded = exclude(backup, sel, f)
	vp, volumesOut, err := planVolumes(backup, sel, opts.Volumes, ext, p.excluded)
	if err != nil {
		<-digested
		return nil, err
	}
	for it, ex := range volumesOut {
		if _, out := p.excluded[it]; !out {
			p.excluded[it] = ex
		}
	}
	needed, uploads, err := vp.claimObjects(backup, sel, p.excluded)
	if err != nil {
		<-digested
		return nil, err
	}
	for it := range needed {
		if by := p.excluded[it].by; by == Filtered || by == NonRestorable {
			delete(p.excluded, it) // restored for the claim whose data it holds
		}
	}
	vp.filled = filledPods(m, ext.PodVolumes, p.excluded)
	vp.adopters = map[types.UID]bool{}
	for pod := range vp.filled {
		for _, uid := range pod.OwnerUIDs {
			vp.adopters[uid] = true
		}
	}
	p.volumes, p.Volumes = vp, opts.Volumes
	// Warnings speak of what the restore takes on: a kind it leaves to the target or
	// filters out is not warned about.
	takenOn, kinds := map[schema.GroupResource]bool{}, map[schema.GroupKind]bool{}
	for _, it := range m.Items() {
		if _, out := p.excluded[it]; !out {
			takenOn[it.GroupResource()] = true
			kinds[it.GroupVersionKind().GroupKind()] = true
		}
	}
	lay, _ := backup.(layout)
	for _, c := range vplan.Choices {
		var dir string
		if lay != nil {
			dir = lay.Dir(c.GroupResource, c.Version)
		}
		p.Versions = append(p.Versions, choiceOf(c, dir))
		if !c.Restorable() && takenOn[c.GroupResource] {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: %s", c.GroupResource, c.Explain()))
		}
	}
	p.through = throughServed(m, vplan)
	if p.actions, err = actions(backup, sel, ext, p.excluded); err != nil {
		<-digested
		return nil, err
	}
	p.Plugins = []PlannedPlugin{}
	for _, a := range p.actions {
		p.Plugins = append(p.Plugins, PlannedPlugin{Name: a.Name, Version: a.Version, AppliesTo: a.Selector})
	}
	if err := vp.checkVolumeActions(sel, func(name string) bool {
		return slices.ContainsFunc(p.actions, func(a *plugin.Action) bool { return a.Name == name })
	}); err != nil {
		<-digested
		return nil, err
	}
	if p.gates, err = p.claimGates(ctx, target); err != nil {
		<-digested
		return nil, err
	}
	platformRules, ready, warnings, err := p.platformRules()
	if err != nil {
		<-digested
		return nil, err
	}
	p.ready, p.Warnings = ready, append(p.Warnings, warnings...)
	rules := append(slices.Clone(ext.Rules), platformRules...)
	if sel.Order != nil {
		rule, gates, warnings := sel.Order.rule(m, func(it *manifest.Item) bool { _, out := p.excluded[it]; return !out })
		for it, g := range gates {
			if _, ok := p.ready[it]; !ok {
				p.ready[it] = g
			}
		}
		p.Warnings = append(p.Warnings, warnings...)
		if len(rule.steps) > 0 {
			rules = append(rules, rule)
		}
	}
	if !sel.Disabled.Rule(StatefulSetClaims) {
		rules = append([]graph.Rule{graph.StatefulSetClaims}, rules...)
	}
	if len(uploads) > 0 {
		rules = append(rules, dataUploadRule(uploads))
	}
	gopts := graph.Options{Rules: rules}
	if len(vp.filled) > 0 {
		first := podVolumesFirst(vp.filled)
		gopts.Rules, gopts.Detach = append(gopts.Rules, first), first.detached
	}
	g, gerr := graph.New(m, gopts)
	p.graph, p.manifest = g, m
	for id := range int64(g.Len()) {
		if g.NodeAt(id).Item != nil {
			p.objects++
		}
	}
	var ce *graph.CycleError
	for _, e := range unjoin(gerr) {
		if errors.As(e, &ce) {
			continue
		}
		p.Warnings = append(p.Warnings, e.Error())
	}
	if ce != nil {
		for _, c := range ce.Cycles {
			pc := PlannedCycle{Text: c.String()}
			for i, n := range c.Nodes {
				pc.UIDs = append(pc.UIDs, n.Item.UID)
				pc.Edges = append(pc.Edges, g.KindString(c.Kinds[i]))
			}
			p.Cycles = append(p.Cycles, pc)
		}
		p.Warnings = append(p.Warnings, fmt.Sprintf("%d dependency cycle(s) block %d object(s)", len(ce.Cycles), ce.Blocked))
	}
	for _, n := range g.Blocked() {
		p.Blocked = append(p.Blocked, n.Item.UID)
	}
	for _, w := range g.Warnings() {
		p.Warnings = append(p.Warnings, w.String())
	}
	path, _ := g.CriticalPath(nil)
	for _, n := range path {
		if n.Item != nil {
			p.CriticalPath = append(p.CriticalPath, n.Item.UID)
		}
	}
	p.Warnings = append(p.Warnings, unprobedKinds(kinds, ext.Readiness)...)
	for _, gr := range slices.SortedFunc(maps.Keys(sel.Priorities), manifest.CompareGroupResources) {
		if _, held := m.Resource(gr); !held {
			p.Warnings = append(p.Warnings, fmt.Sprintf("version priorities name %s, which the backup does not hold", gr))
		}
	}
	p.source.Digest = <-digested
	return p, nil
}

// Len returns the number of objects the plan lists: every object of the backup,
// those it leaves to the target included.
func (p *Plan) Len() int { return p.objects }

// Objects iterates the plan's objects in restore order, with each one's level, what it
// depends on and why. Each is computed as it is yielded, so that a plan of a million
// objects does not hold a million of them; slices.Collect lists them.
func (p *Plan) Objects() iter.Seq[PlannedObject] {
	return func(yield func(PlannedObject) bool) {
		g := p.graph
		levels := g.Levels()
		for _, n := range g.Order() {
			if n.Item != nil && !yield(p.object(n, levels[n.ID()])) {
				return
			}
		}
	}
}

// object describes node n, at level.
func (p *Plan) object(n *graph.Node, level int) PlannedObject {
	it := p.item(n.ID())
	po := PlannedObject{ObjectRef: refOf(it, versionOf(p.versions, it), p.sel.NamespaceMappings), Level: level}
	for _, c := range p.manifest.Aliases(it.UID) {
		if c != it {
			po.Folded = append(po.Folded, c.GroupResource().String())
		}
	}
	if n.Item != it {
		po.Folded = append(po.Folded, n.Item.GroupResource().String())
	}
	po.Volume, po.Gate = p.volumeOf(n.Item), p.gates[n.Item].why
	if g, ok := p.ready[n.Item]; ok {
		po.Gate = g.String()
	}
	if ex, ok := p.excluded[n.Item]; ok {
		po.Excluded, po.ExcludedBy = ex.reason, ex.by
	} else if m := p.sel.Modifiers; m != nil {
		po.Modifiers = m.Candidates(modifier.Identity{GroupResource: it.GroupResource(), Namespace: it.Namespace, Name: it.Name, Labels: it.Labels})
	}
	preds := itemPredecessors(p.graph, n.ID())
	po.DependsOn = make([]Dependency, len(preds))
	for i, pred := range preds {
		po.DependsOn[i] = Dependency{UID: pred.item.UID, Reason: p.graph.KindString(pred.kinds)}
	}
	return po
}

// Object returns the plan's object whose UID in the backup is uid.
func (p *Plan) Object(uid types.UID) (ObjectRef, bool) {
	it, ok := p.manifest.ByUID(uid)
	if !ok {
		return ObjectRef{}, false
	}
	if t, ok := p.through[uid]; ok {
		it = t
	}
	return refOf(it, versionOf(p.versions, it), p.sel.NamespaceMappings), true
}

// planHead is the plan's JSON before its objects.
type planHead struct {
	Format    string    `json:"format"`
	Backup    BackupRef `json:"backup"`
	Selection Selection `json:"selection"`
	*planFields
}

type planFields Plan // the fields without MarshalJSON

func (p *Plan) head() planHead {
	return planHead{Format: PlanFormat, Backup: p.source, Selection: p.sel, planFields: (*planFields)(p)}
}

// MarshalJSON writes the plan in its saved format (PlanFormat), with its objects listed
// as Objects yields them.
func (p *Plan) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		planHead
		Objects jsonSeq[PlannedObject] `json:"objects"`
	}{p.head(), jsonSeq[PlannedObject](p.Objects())})
}

// WriteJSON writes the plan in its saved format to w, indented, as json.MarshalIndent
// would, but computes, encodes and writes its objects one at a time. ReadPlan reads it
// back.
func (p *Plan) WriteJSON(w io.Writer) error {
	return writeJSON(w, p.head(), p.Objects())
}

// choiceOf is c as a plan shows it, dir being where its version lies in the backup.
func choiceOf(c versionselect.Choice, dir string) VersionChoice {
	return VersionChoice{
		Group: c.GroupResource.Group, Resource: c.GroupResource.Resource, Version: c.Version, Dir: dir,
		Rule: string(c.Rule), Explanation: c.Explain(), SourceVersions: c.SourceVersions, TargetVersions: nonNil(c.TargetVersions),
		TargetFromCRD: c.TargetFromCRD, InvalidCRD: c.InvalidCRD,
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func versionOf(v *versionselect.Plan, it *manifest.Item) string {
	if c, ok := v.For(it.GroupResource()); ok {
		return c.Version
	}
	return it.Version
}

type itemDep struct {
	item  *manifest.Item
	kinds graph.EdgeKind
}

// itemPredecessors returns the objects a node waits for, looking through barriers.
func itemPredecessors(g *graph.Graph, id int64) []itemDep {
	var out []itemDep
	seen := map[int64]bool{}
	var walk func(int64, graph.EdgeKind)
	walk = func(v int64, via graph.EdgeKind) {
		for _, p := range g.Predecessors(v) {
			pid := int64(p)
			k := g.EdgeFromTo(pid, v).Kinds | via
			if n := g.NodeAt(pid); n.Item == nil {
				walk(pid, k)
			} else if !seen[pid] {
				seen[pid] = true
				out = append(out, itemDep{n.Item, k})
			}
		}
	}
	walk(id, 0)
	return out
}

// unprobedKinds warns of the kinds judged by the policy for unknown kinds.
func unprobedKinds(kinds map[schema.GroupKind]bool, reg *readiness.Registry) []string {
	var out []string
	for gk := range kinds {
		if reg.Known(gk) {
			continue
		}
		out = append(out, fmt.Sprintf("no readiness probe for %s: policy %s", gk, reg.Unknown))
	}
	slices.Sort(out)
	return out
}

// throughServed picks, for each object listed under several group-resources, a copy
// the target serves when the manifest's own choice is not served.
func throughServed(m *manifest.Manifest, v *versionselect.Plan) map[types.UID]*manifest.Item {
	out := map[types.UID]*manifest.Item{}
	for it, copies := range m.Folded() {
		if c, ok := v.For(it.GroupResource()); ok && c.Restorable() {
			continue
		}
		for _, alt := range copies {
			if c, ok := v.For(alt.GroupResource()); ok && c.Restorable() {
				out[it.UID] = alt
				break
			}
		}
	}
	return out
}
