package versionselect

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/restoregraph/restoregraph/internal/discoverctx"
)

// Discovery is the part of client-go's discovery client that Discover uses: the method
// every client-go release the library builds with has. A Discovery that also has
// ServerGroupsAndResourcesWithContext, as client-go's has from v0.37, is asked through
// it; one without it is asked apart, and Discover returns when its context ends.
type Discovery = discoverctx.GroupsAndResources

// TargetResource is what the target serves, or will serve, of one group-resource.
type TargetResource struct {
	Versions  []string // highest priority first
	Preferred string
	// FromCRD names the backup's CRD these versions come from; "" when from discovery.
	FromCRD string
	// Storage is the version the backup's CRD stores objects at when a conversion
	// webhook converts between its versions (Versions.Storage), whether or not the
	// target serves the group-resource already; "" otherwise.
	Storage string
	// InvalidCRD says, when the target does not serve the group-resource, why the
	// backup's CRD for it cannot serve it either: its name and what is wrong with it.
	InvalidCRD string
}

// Target is what the target cluster serves, per group-resource.
type Target map[schema.GroupResource]TargetResource

// Discover reads what the target serves from discovery. A resource's preferred version
// is its group's preferred version when the resource is served there, else the resource's
// highest-priority version. When some groups fail to load, the rest is returned with an
// error wrapping *discovery.ErrGroupDiscoveryFailed; callers may go on with a warning.
func Discover(ctx context.Context, d Discovery) (Target, error) {
	groups, lists, err := discoverctx.ServerGroupsAndResources(ctx, d)
	var partial *discovery.ErrGroupDiscoveryFailed
	if err != nil && !errors.As(err, &partial) {
		return nil, fmt.Errorf("versionselect: discovery: %w", err)
	}
	groupPreferred := map[string]string{}
	for _, g := range groups {
		groupPreferred[g.Name] = g.PreferredVersion.Version
	}
	t := Target{}
	for _, list := range lists {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") { // subresources
				continue
			}
			gr := schema.GroupResource{Group: gv.Group, Resource: r.Name}
			tr := t[gr]
			tr.Versions = append(tr.Versions, gv.Version)
			t[gr] = tr
		}
	}
	for gr, tr := range t {
		tr.Versions = sorted(tr.Versions)
		tr.Preferred = tr.Versions[0]
		for _, v := range tr.Versions {
			if v == groupPreferred[gr.Group] {
				tr.Preferred = v
			}
		}
		t[gr] = tr
	}
	if partial != nil {
		return t, fmt.Errorf("versionselect: discovery is partial: %w", err)
	}
	return t, nil
}

// WithCRDs returns the target as it will be once crds (from the backup) are restored:
// each CRD whose group-resource the target does not serve contributes its served
// versions. Where the target already serves the group-resource, its own versions stand.
// CRDs that break the versioning rules, or serve nothing, contribute no versions, only
// the reason (InvalidCRD); so do the backup's CRDs that could not be read (invalid).
func (t Target) WithCRDs(crds []*apiextv1.CustomResourceDefinition, invalid ...*InvalidCRDError) Target {
	out := make(Target, len(t)+len(crds))
	for gr, tr := range t {
		out[gr] = tr
	}
	for _, crd := range crds {
		gr := CRDGroupResource(crd)
		if tr, served := t[gr]; served {
			// The target's CRD stands, and a restore keeps it; where it stores what the
			// backup's does, objects sent at that version are stored as sent.
			if tr.Storage = WebhookStorage(crd); tr.Storage != "" {
				out[gr] = tr
			}
			continue
		}
		if err := ValidateCRDVersions(crd); err != nil {
			out[gr] = TargetResource{InvalidCRD: fmt.Sprintf("%s: %v", crd.Name, err)}
			continue
		}
		versions := ServedVersions(crd)
		out[gr] = TargetResource{Versions: versions, Preferred: versions[0], FromCRD: crd.Name, Storage: WebhookStorage(crd)}
	}
	for _, e := range invalid {
		if _, served := t[e.GroupResource]; !served {
			out[e.GroupResource] = TargetResource{InvalidCRD: e.Error()}
		}
	}
	return out
}
