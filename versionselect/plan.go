package versionselect

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/restoregraph/restoregraph/manifest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Source is what the backup holds: its manifest records the versions of every
// group-resource. archive.Backup satisfies it, and so does any backup built with
// manifest.Builder.
type Source interface {
	Manifest() *manifest.Manifest
}

// Options tune a plan.
type Options struct {
	Priorities Priorities
	// Strict fails planning when a group-resource has no version in common with the
	// target, instead of attempting the source's preferred version.
	Strict bool
}

// Plan is the chosen version of every group-resource in a backup.
type Plan struct {
	Choices []Choice // ordered by group, then resource
	byGR    map[schema.GroupResource]int
}

// For returns the choice for gr.
func (p *Plan) For(gr schema.GroupResource) (Choice, bool) {
	i, ok := p.byGR[gr]
	if !ok {
		return Choice{}, false
	}
	return p.Choices[i], true
}

// NotRestorable returns the choices whose resources the target will not serve: not
// served at all, or with no version in common.
func (p *Plan) NotRestorable() []Choice {
	var out []Choice
	for _, c := range p.Choices {
		if !c.Restorable() {
			out = append(out, c)
		}
	}
	return out
}

// NoCommonVersionError is returned in strict mode: the listed group-resources share no
// version with the target.
type NoCommonVersionError struct {
	Choices []Choice
}

func (e *NoCommonVersionError) Error() string {
	parts := make([]string, len(e.Choices))
	for i, c := range e.Choices {
		parts[i] = fmt.Sprintf("%s (backup %v, target %v)", c.GroupResource, c.SourceVersions, c.TargetVersions)
	}
	return "no common API version for " + strings.Join(parts, ", ")
}

// NewPlan chooses a version for every group-resource of src against target.
func NewPlan(src Source, target Target, opts Options) (*Plan, error) {
	p := &Plan{byGR: map[schema.GroupResource]int{}}
	var conflicts []Choice
	for _, res := range src.Manifest().Resources() {
		gr := res.GroupResource
		tr := target[gr]
		c := Choose(gr, Versions{Versions: res.Versions, Preferred: res.Preferred}, Versions{Versions: tr.Versions, Preferred: tr.Preferred, Storage: tr.Storage}, opts.Priorities[gr])
		c.TargetFromCRD, c.InvalidCRD = tr.FromCRD, tr.InvalidCRD
		if c.Rule == RuleNoCommonVersion {
			conflicts = append(conflicts, c)
		}
		p.byGR[gr] = len(p.Choices)
		p.Choices = append(p.Choices, c)
	}
	slices.SortFunc(p.Choices, func(a, b Choice) int { return manifest.CompareGroupResources(a.GroupResource, b.GroupResource) })
	for i, c := range p.Choices {
		p.byGR[c.GroupResource] = i
	}
	if opts.Strict && len(conflicts) > 0 {
		return p, &NoCommonVersionError{Choices: conflicts}
	}
	return p, nil
}

// Bodies is what BackupCRDs reads a backup through; archive.Backup satisfies it.
type Bodies interface {
	Source
	Body(gr schema.GroupResource, version, namespace, name string) ([]byte, error)
}

// Backup is what PlanBackup plans: versions and bodies. archive.Backup satisfies it.
type Backup = Bodies

// InvalidCRDError is a CRD in the backup that cannot be read: it is reported, and the
// group-resource it would define is planned as not served.
type InvalidCRDError struct {
	Name string
	schema.GroupResource
	Err error
}

func (e *InvalidCRDError) Error() string { return fmt.Sprintf("%s: %v", e.Name, e.Err) }

func (e *InvalidCRDError) Unwrap() error { return e.Err }

// BackupCRDs decodes the CustomResourceDefinitions a backup carries, at the version each
// was recorded at. A CRD that cannot be decoded is returned among the invalid ones,
// naming it; err is for a body that cannot be read at all.
func BackupCRDs(b Bodies) (crds []*apiextv1.CustomResourceDefinition, invalid []*InvalidCRDError, err error) {
	for it := range b.Manifest().All() {
		if it.GroupResource() != manifest.CRDGroupResource {
			continue
		}
		data, err := b.Body(it.GroupResource(), it.Version, "", it.Name)
		if err != nil {
			return nil, nil, err
		}
		crd, err := DecodeCRD(data)
		if err != nil {
			gr, _ := manifest.DefinedBy(it.Name)
			invalid = append(invalid, &InvalidCRDError{Name: it.Name, GroupResource: gr, Err: err})
			continue
		}
		crds = append(crds, crd)
	}
	return crds, invalid, nil
}

// PlanBackup is the usual sequence: discover the target, merge the CRDs the backup
// carries, and choose. A partial discovery is returned as a warning beside the plan.
func PlanBackup(ctx context.Context, b Backup, d Discovery, opts Options) (plan *Plan, discoveryWarning error, err error) {
	target, derr := Discover(ctx, d)
	if target == nil {
		return nil, nil, derr
	}
	crds, invalid, err := BackupCRDs(b)
	if err != nil {
		return nil, derr, err
	}
	plan, err = NewPlan(b, target.WithCRDs(crds, invalid...), opts)
	return plan, derr, err
}
