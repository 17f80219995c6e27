package versionselect

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Rule names the rule that chose a version.
type Rule string

const (
	RuleUserPriority Rule = "UserPriority" // P0
	// RuleStorageVersion: the version a CRD converted by a webhook stores, which the
	// backup holds. Objects created at it are stored as sent: the API server calls no
	// conversion webhook, whose backend may not be running yet.
	RuleStorageVersion  Rule = "StorageVersion"
	RuleTargetPreferred Rule = "TargetPreferred" // P1
	RuleSourcePreferred Rule = "SourcePreferred" // P2
	RuleCommon          Rule = "CommonVersion"   // P3
	// RuleNoCommonVersion: source and target share no version; the source's preferred
	// version is attempted.
	RuleNoCommonVersion Rule = "NoCommonVersion"
	// RuleNotServed: the target does not serve the group-resource and no CRD in the
	// backup provides it. Such a resource is not restorable.
	RuleNotServed Rule = "NotServed"
)

// Versions is one side's versions of a group-resource.
type Versions struct {
	Versions  []string // any order; Choose considers them by Kubernetes priority
	Preferred string
	// Storage is, on the target's side, the version its CRD stores objects at when a
	// conversion webhook converts between its versions; "" otherwise.
	Storage string
}

// Choice is the version chosen for one group-resource, and why.
type Choice struct {
	GroupResource schema.GroupResource
	Version       string
	Rule          Rule

	SourceVersions  []string // highest priority first
	SourcePreferred string
	TargetVersions  []string // highest priority first; empty when not served
	TargetPreferred string
	// TargetFromCRD names the backup's CRD that supplied the target versions, when the
	// target does not serve the resource yet.
	TargetFromCRD string
	// InvalidCRD says why the backup's CRD for the resource cannot serve it, when the
	// target does not serve it either.
	InvalidCRD string
}

// Restorable reports whether the target will serve the chosen version.
func (c Choice) Restorable() bool {
	return c.Rule != RuleNotServed && c.Rule != RuleNoCommonVersion
}

// Explain says in one sentence why the version was chosen.
func (c Choice) Explain() string {
	switch c.Rule {
	case RuleUserPriority:
		return fmt.Sprintf("%s: first version in the user's priority list that both sides support", c.Version)
	case RuleStorageVersion:
		return fmt.Sprintf("%s: the version its CRD stores, present in the backup: no conversion webhook is called", c.Version)
	case RuleTargetPreferred:
		return fmt.Sprintf("%s: the target's preferred version, present in the backup", c.Version)
	case RuleSourcePreferred:
		return fmt.Sprintf("%s: the source's preferred version, served by the target", c.Version)
	case RuleCommon:
		return fmt.Sprintf("%s: the highest-priority version both sides support", c.Version)
	case RuleNoCommonVersion:
		return fmt.Sprintf("no common version (backup %v, target %v): attempting the source's preferred %s", c.SourceVersions, c.TargetVersions, c.Version)
	case RuleNotServed:
		if c.InvalidCRD != "" {
			return fmt.Sprintf("the target does not serve %s, and the backup's CRD for it is invalid: %s", c.GroupResource, c.InvalidCRD)
		}
		return fmt.Sprintf("the target does not serve %s and the backup carries no CRD for it", c.GroupResource)
	}
	return string(c.Rule)
}

// Choose applies the rules P0 to P3 to one group-resource. user is the user's priority
// list for it (may be nil). A target with no versions gives RuleNotServed.
func Choose(gr schema.GroupResource, source, target Versions, user []string) Choice {
	c := Choice{
		GroupResource:   gr,
		SourceVersions:  sorted(source.Versions),
		SourcePreferred: source.Preferred,
		TargetVersions:  sorted(target.Versions),
		TargetPreferred: target.Preferred,
		Version:         source.Preferred,
	}
	if len(c.TargetVersions) == 0 {
		c.Rule = RuleNotServed
		return c
	}
	inSource := func(v string) bool { return slices.Contains(c.SourceVersions, v) }
	inTarget := func(v string) bool { return slices.Contains(c.TargetVersions, v) }
	for _, v := range user {
		if inSource(v) && inTarget(v) {
			c.Version, c.Rule = v, RuleUserPriority
			return c
		}
	}
	if target.Storage != "" && inSource(target.Storage) && inTarget(target.Storage) {
		c.Version, c.Rule = target.Storage, RuleStorageVersion
		return c
	}
	if target.Preferred != "" && inSource(target.Preferred) {
		c.Version, c.Rule = target.Preferred, RuleTargetPreferred
		return c
	}
	if source.Preferred != "" && inTarget(source.Preferred) {
		c.Version, c.Rule = source.Preferred, RuleSourcePreferred
		return c
	}
	for _, v := range c.SourceVersions { // highest priority first
		if inTarget(v) {
			c.Version, c.Rule = v, RuleCommon
			return c
		}
	}
	c.Rule = RuleNoCommonVersion
	return c
}
