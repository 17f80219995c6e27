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
// Read, ReadFile and Open take a context: once it is done, nothing more is read.
//
// Guarantees for hostile input: entries with absolute paths, "..", links, devices or
// other special types are refused with an *EntryError wrapping ErrUnsafeEntry; the size
// of each entry, the total uncompressed size and the number of entries are capped
// (Options) with a *LimitError; a file that is not a Kubernetes object in JSON gives an
// *EntryError naming its path in the tarball.
//
// Bodies are kept in memory up to Options.MemoryBytes, the rest in one spill file in
// Options.SpillDir (the system's temporary directory by default), which Close removes;
// Read writes nowhere else. Once some have spilled, the rest follow when the tarball
// ends: a large backup keeps none in its heap. Without a manifest, every body is read
// for its metadata, with inflating on a goroutine of its own and the second copy Velero writes of each
// preferred body kept once. A backup that carries its manifest before the bodies (as
// restoregraph's backup writes it) is described by the manifest: ReadFile returns as
// soon as it has it, and bodies are read from the file when first asked for, so that a
// plan reads no body at all. Such bodies are not checked until they are decoded; an
// entry that breaks the rules after the manifest fails the Body call that meets it.
//
// The reader is split by concern: reader.go is the API (Read, the Backup and its
// accessors), entries.go walks the tarball under the limits, index.go builds the
// manifest from the copies it meets and places their bodies, meta.go decodes an
// object's metadata, decode.go does that and the index beside the walk, each on a
// goroutine of its own, store.go keeps bodies in
// memory or spilled (the spill file written beside the walk too), source.go opens a
// backup by file, URL or location, layout.go reads and makes the paths of both
// formats, and writer.go writes a backup.
package archive
