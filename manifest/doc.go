// Package manifest records what a Kubernetes backup holds, compactly: for every object
// its API group, version, kind, resource, namespace, name, UID, labels, annotations and
// the UIDs of its owners. A manifest is small beside the backup it describes and is
// stored next to it as manifest.json or manifest.json.gz.
//
// Guarantees:
//
//   - Identity. An object's identity (ID) is group, resource, namespace and name, without
//     the version: the same object backed up at v1beta1 and at v1 is one object. Inside
//     one manifest both the UID and the identity are unique; Add refuses a second item
//     with either, returning ErrItemAlreadyExists.
//   - Determinism. Items, groups and sets are iterated in one canonical order (group,
//     version, namespace, resource, name), whatever the order they were added in, so two
//     runs over the same backup see the same sequence.
//   - Nothing dropped silently. An owner UID that names no item in the manifest is kept
//     on the item and reported by Dangling.
//   - Streaming. Encode and Decode work item by item; a large manifest is never held as
//     one JSON text in memory. Decode errors name the item and field where they occurred.
//   - Concurrency. A Manifest may be read from many goroutines once nothing more is
//     added; Add must not run concurrently with anything else.
//
// Sets of identities (Set) answer whether two backups or restores touch the same
// objects; package admission builds on them.
package manifest
