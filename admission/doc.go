// Package admission admits concurrent operations (restores, backups, the caller's own)
// when the objects they touch do not overlap, as Velero's backup-manifest design
// intends: an operation's manifest says what it writes and what it reads, and two
// operations conflict when one writes what the other reads or writes. Two readers never
// conflict.
//
// Guarantees, for Local (one process) and Cluster (many, through the API server):
//
//   - Safety. No two operations that conflict run at once. Identities are compared by a
//     64-bit hash: a collision can make an operation wait, never let two overlapping
//     ones run.
//   - First come, first served among conflicting operations: an operation waits for
//     every earlier one it conflicts with, running or waiting, so a stream of small
//     operations never starves a large one. An operation that conflicts with nothing
//     earlier runs at once.
//   - Withdrawal. Cancelling a waiting operation's context withdraws it; what waited
//     behind it is reconsidered.
//   - Loss is told. A Cluster operation whose Lease goes unrenewed for its duration, or
//     is removed or taken by another process, has lost its admission: its
//     Operation.Lost is called with ErrLost, and the holder stops writing (restore and
//     backup cancel themselves). A dry run (Conflicts) writes nothing to the cluster.
//   - Speed. A decision looks up the operation's identities in an index of the holders
//     of each, rather than intersecting sets pairwise: its cost grows with the size of
//     the operation, not with the number running.
package admission
