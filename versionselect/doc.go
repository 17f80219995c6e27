// Package versionselect decides, for each group-resource in a backup, the API version
// to restore it at, and says why.
//
// The rules follow Velero's EnableAPIGroupVersions design, in priority order:
//
//   - P0 (RuleUserPriority): the first version in the user's list for the resource that
//     both the source (the backup) and the target support.
//   - P1 (RuleTargetPreferred): the target's preferred version, if the backup has it.
//   - P2 (RuleSourcePreferred): the source's preferred version, if the target serves it.
//   - P3 (RuleCommon): otherwise the highest-priority version both support.
//   - Otherwise there is no common version (RuleNoCommonVersion): the choice falls back
//     to the source's preferred version, as Velero does, unless Options.Strict is set,
//     when planning fails with a *NoCommonVersionError listing every such resource.
//
// Versions are ordered the Kubernetes way (GA > beta > alpha, then by major and minor
// number; names that are not Kubernetes-style sort last, alphabetically), with
// k8s.io/apimachinery/pkg/version.
//
// What the target serves comes from discovery, merged with the CRDs the backup carries:
// a CRD that the target does not serve yet will serve, after the restore, that CRD's
// served versions, with its highest-priority served version preferred (as an API server
// ranks them in discovery, whatever the order of spec.versions). A group-resource that
// the target does not serve and that no CRD in the backup provides is not restorable.
//
// Every Choice carries the version, the directory in the archive that holds it, the rule
// that chose it and both sides' versions, so a plan can explain itself.
package versionselect
