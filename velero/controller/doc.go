// Package controller carries out Velero's Restore objects as restoregraph restores, in
// place of Velero's restore controller (run Velero's server with --disable-controllers
// restore,restore-operations,restore-finalizer).
//
// An embedder builds a Controller from a Config (the clients of the cluster, the plugin
// host and Velero's plugins, the options of each restore) and runs it until its context
// ends:
//
//	c, err := controller.New(controller.Config{Velero: v, Kubernetes: cs, Target: tgt,
//		Plugins: host, PluginCommands: commands})
//	if err != nil { ... }
//	err = c.Run(ctx)
//
// What it guarantees:
//
//   - Level-based. It works from what the API server holds, never from memory: an
//     informer lists and watches the Restores of Velero's namespace and a rate-limited
//     work queue hands each name to one worker; every write is made under the
//     resourceVersion it was read at. Any process can carry on what another started.
//   - One process per Restore. Each unfinished Restore has a Lease of its own
//     (restoregraph-restore-NAME, owned by the Restore); the process holding it carries
//     the Restore out. If that process dies, the Lease expires and another takes the
//     Restore over: it follows the journal the first kept in ConfigMaps beside the
//     Restore, so that nothing is made twice and plugins' asynchronous operations are
//     followed, not started again. A Restore whose backup, location or records cannot
//     be read because the API server, etcd or the location is away is carried out again
//     later, not ended; an ended Restore's Lease is deleted.
//   - Velero's phases and records. A Restore moves New → InProgress → Completed,
//     PartiallyFailed, Failed or FailedValidation (a field restoregraph does not do
//     fails validation, named), with its progress, its status written with Velero's
//     types, its results, resource list and log (a line per object) in the backup's
//     location, so that velero restore describe --details and velero restore logs show
//     it. A deleted Restore has its files removed from the location before Velero's
//     finalizer lets it go.
//   - Order and overlap. Restores enter admission in the order they were created;
//     those that touch the same objects wait for each other (Config.Admitter, across
//     processes through Leases), those that do not run at once, Config.Restores at a
//     time in each process.
//   - Guarded. A Restore that would reach where Velero's own checks let anyone who
//     may create a Restore reach (Config.Guard: a protected namespace, resource
//     modifiers that rewrite RBAC, a location not listed) fails validation before its
//     backup is read. With Config.AsRequester a Restore is carried out with the rights
//     of the user who created it, as RequesterPolicy recorded them, and refused, each
//     missing right named, before anything is written when they lack any.
//   - Observable. Events on each Restore (Taken, TakenOver, WaitingForAdmission, its
//     end), structured logs, and Metrics (package metrics serves them to Prometheus).
//
// Run returns once every goroutine it started has returned and every Lease it held is
// released.
package controller
