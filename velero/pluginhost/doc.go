// Package pluginhost runs Velero's plugins unmodified, out of process, as Velero's
// server runs them: executables that serve plugin kinds over gRPC (hashicorp
// go-plugin, Velero's handshake and generated protocol). It speaks two kinds:
//
//   - RestoreItemActions, v1 and v2 (with v2's asynchronous operations, followed
//     through Progress and Cancel by the ID Execute returned). Discover asks each
//     executable which it serves and what each applies to; Register puts them in a
//     plugin.Registry, v2 ones as v2, v1 ones as v1, adapted as in-process ones are.
//   - ObjectStores, which read and write a bucket where Velero keeps backups
//     (Host.ObjectStore): an archive.Source, so that a backup is read from any store
//     Velero supports with no provider code here.
//
// Lifecycle, as Velero's restartable processes: one process per executable, started
// on first use; a call whose process died fails with an error that says so, and the
// next call starts the process again. Calls take the object's context: a call that
// outlives it (the plugin hangs) fails saying so, and its process is replaced for the
// next calls and killed once no call waits on it. Cancelling the restore reaches calls
// under way. Close ends every process; each is also started with a parent-death
// signal, so none outlives the host.
//
// Velero's plugin framework itself is not imported: only its generated gRPC packages.
package pluginhost
