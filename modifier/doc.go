// Package modifier applies resource modifiers: the rules, in Velero's format (version
// v1, Velero ≥ 1.12), that change objects as they are restored. Users rewrite storage
// classes, image registries, replica counts and annotations this way when restoring
// into another cluster.
//
// A rule has conditions and patches. The conditions are a groupResource glob
// ("deployments.apps", "*.apps", "pods"), namespaces (globs; cluster-scoped objects
// pass), a resourceNameRegex, a labelSelector, and matches: values that fields of the
// object must hold, given as JSON pointers. The patches are one kind per rule: JSON
// patches (RFC 6902, with Velero's reading of values), JSON merge patches or strategic
// merge patches (built-in kinds only, as in Velero), in YAML or JSON.
//
// Guarantees, where Velero's reading is followed and where it is made stricter:
//
//   - Velero's semantics. Every rule's conditions are judged on the object as it was
//     before any rule changed it; the patches of the rules that match apply in order,
//     each to the result of the last. A JSON patch whose test operation fails leaves
//     the object as it is, and is no error. A JSON patch value is quoted as Velero
//     quotes it: numbers, true, false, null, objects and arrays are JSON, anything else
//     a string, and "quoted" values strings.
//   - Nothing ignored. Parse refuses unknown fields, a version other than v1, a rule
//     with no patch or with two kinds, and also, up front rather than on the first
//     object as Velero does, a glob, regular expression, label selector, patch or value
//     that does not compile. Each error is a *RuleError naming the field, as
//     resourceModifierRules[2].patches[0].value.
//   - A rule that fails on an object (a patch that does not apply) is an error naming
//     the rule. Velero records it and creates the object unchanged; a restore fails the
//     object instead, since it is not what the user asked for.
//
// Modifiers is safe for concurrent use once parsed.
package modifier
