// Package restore restores a Kubernetes backup into a cluster as a dependency graph.
//
// Run reads the backup's manifest, chooses an API version per group-resource
// (versionselect), builds the restore DAG (graph) and runs it (scheduler), with the
// plan's longest remaining paths as priorities: each object starts as soon as
// everything it depends on is restored and ready. What Run talks to comes in as
// values: a Target (dynamic client, discovery, RESTMapper; NewTarget builds one from a
// *rest.Config), a Journal, a clock, a plugin registry, graph rules.
//
// Each object passes through named steps (Step, DefaultStepNames); Options.Steps may
// add, wrap, replace or remove them:
//
//  1. StepJournal: an object an earlier run recorded, still in the target, is taken as
//     it is once ready.
//  2. StepRead: its body is read at the version chosen for its group-resource.
//  3. StepSanitize: server-set metadata is removed (uid, resourceVersion,
//     creationTimestamp, generation, managedFields, deletion fields, selfLink); status
//     only where asked.
//  4. StepMapNamespaces: it moves into the namespace Options.NamespaceMappings names,
//     with what refers to namespaces inside it (role binding subjects, a volume's
//     claim).
//  5. StepActions: applicable plugins run, newest interface first adapted from older
//     ones; each call is charged to the object's ItemTimeout, so a plugin that hangs
//     fails its object. Additional items they return are restored first, as dynamic
//     dependencies, then waited for when the plugin asks, within the plugin's own
//     timeout; SkipRestore is honoured.
//  6. StepRemapOwners: an owner restored in this run gets its new UID; an owner outside
//     the backup is looked up in the target by kind, namespace and name; an owner found
//     nowhere is dropped with a warning. No restored object points at a UID that does
//     not exist, so the garbage collector deletes nothing restored.
//  7. StepLabel: velero.io/backup-name and velero.io/restore-name, as Velero labels
//     what it restores.
//  8. StepCreate: it is created through the dynamic client; AlreadyExists is handled by
//     the Existing policy (adopt, update or fail). Transient errors (429, 5xx, timeouts,
//     connections refused or reset) are retried with jittered backoff for as long as
//     the object's ItemTimeout allows.
//  9. StepStatus: status is written for the group-resources in KeepStatus.
//  10. StepReady: its dependents start only once it is ready (package readiness).
//
// Guarantees:
//
//   - Nothing twice. Every created object carries the annotation SourceUIDAnnotation; an
//     AlreadyExists for an object bearing this run's source UID is the same object (a
//     response lost to a timeout, or a run that crashed) and is taken as restored.
//   - Resume. With a Journal (OpenJournal for a file), source-to-new UID mappings are
//     appended as objects are restored (fsync'd in batches; a torn last line is
//     tolerated). Run again with the same journal and the restore continues where it
//     stopped.
//   - Failure isolation. A failed object skips only its descendants, reported with the
//     chain that blocked them.
//
// Plan returns, without writing anything, what Run would do: versions and why, every
// object's dependencies and why, the order, the critical path and the warnings.
package restore
