// Package archive reads and writes Kubernetes backups in Velero's tarball format.
//
// Two layouts are understood. Format 1.0 holds each object once, at the version the
// source cluster preferred:
//
//	resources/<resource>[.<group>]/cluster/<name>.json
//	resources/<resource>[.<group>]/namespaces/<namespace>/<name>.json
//
// Format 1.1.0 (metadata/version) adds a directory per API version; the source's
// preferred version carries the suffix -preferredversion, and is also written at the
// 1.0 path for older readers:
//
//	resources/<resource>[.<group>]/<version>[-preferredversion]/{cluster|namespaces/<ns>}/<name>.json
//
// One Read gives the backup's manifest, the versions present for every group-resource
// with the source's preferred one, and the body of any object at any version present.
//
// Guarantees for hostile input: entries with absolute paths, "..", links, devices or
// other special types are refused with an *EntryError wrapping ErrUnsafeEntry; the size
// of each entry, the total uncompressed size and the number of entries are capped
// (Options) with a *LimitError; a file that is not a Kubernetes object in JSON gives an
// *EntryError naming its path in the tarball. Read writes nothing to disk unless
// Options.SpillDir is set, and then only inside that directory (through os.Root, which
// refuses any path that would leave it).
package archive
