// Package restore restores a Kubernetes backup into a cluster as a dependency graph.
//
// A restore is planned, then applied. NewPlan reads the backup's manifest, chooses an
// API version per group-resource (versionselect) and builds the restore DAG (graph),
// writing nothing: the Plan lists every object with its version, what it waits for and
// why, what is left out and why, the plugins that run, the critical path and the
// warnings. A plan is a value: shown to a person or a policy check, saved
// (Plan.WriteJSON, format PlanFormat) and read back (ReadPlan, SavedPlan.Open, which
// refuses with a *PlanChangedError when the backup or the target changed). Apply runs
// exactly it (scheduler): each object starts as soon as everything it depends on is
// restored and ready, what the restore waits on (namespaces, CRDs, kinds judged by their
// status) and what leads to it first, the rest namespace by namespace (cluster-scoped
// objects first, then the namespaces by name), each namespace's in the backup's order.
// Verify checks a target against the same plan. Run is NewPlan and Apply at once.
//
// The options come by concern: PlanOptions carry the Selection (what to restore: filter,
// mappings, priorities, status, policy; saved with the plan) and the Extensions (code:
// plugins, readiness, rules, steps); RunOptions say how to run (workers, timeouts,
// retry, journal, admission, events, a *slog.Logger, the clock). Each zero value means
// the defaults. What Apply talks to comes in as values: a Target (dynamic client,
// discovery, RESTMapper; NewTarget builds one from a *rest.Config), a Journal, a clock.
//
// Each object's outcome carries a typed error (ObjectResult.Err: ErrItemTimeout, the API
// server's *apierrors.StatusError, *PluginError, *BlockedError, *StepError, ...). The
// logger is the standard library's *slog.Logger, so that no logging library is imposed
// on an embedder: one that logs through logr, client-go's convention, passes
// slog.New(logr.ToSlogHandler(its logger)).
//
// Each object passes through named steps (Step, DefaultStepNames); Extensions.Steps may
// add, wrap, replace or remove them, and Verify runs the same steps up to StepCreate as a
// dry run (Object.DryRun):
//
//  1. StepJournal: an object an earlier run recorded, still in the target, is taken as
//     it is once ready.
//  2. StepRead: its body is read at the version chosen for its group-resource.
//  3. StepSanitize: server-set metadata is removed (uid, resourceVersion,
//     creationTimestamp, generation, managedFields, deletion fields, selfLink); status
//     only where asked.
//  4. StepMapNamespaces: it moves into the namespace Selection.NamespaceMappings names,
//     with what refers to namespaces inside it (role binding subjects, a volume's
//     claim).
//  5. StepVolume: a PersistentVolume whose data comes back from a native snapshot is
//     pointed at a volume made of it (Extensions.VolumeSnapshotters).
//  6. StepActions: applicable plugins run, newest interface first adapted from older
//     ones; each call is charged to the object's ItemTimeout, so a plugin that hangs
//     fails its object. Additional items they return are restored first, as dynamic
//     dependencies, then waited for when the plugin asks, within the plugin's own
//     timeout; SkipRestore is honoured.
//  7. StepModify: the resource modifiers of Selection.Modifiers (Velero's format, package
//     modifier) that match it change it, judged by its namespace and name in the
//     backup, as Velero judges them; a rule that fails fails the object, naming it.
//  8. StepInitHooks: a Pod gets the init containers of its restore hooks (its
//     init.hook.restore.velero.io annotations, or else Selection.Hooks; package hook)
//     before its own.
//  9. StepRemapOwners: an owner restored in this run gets its new UID; an owner outside
//     the backup is looked up in the target by kind, namespace and name; an owner found
//     nowhere is dropped with a warning. No restored object points at a UID that does
//     not exist, so the garbage collector deletes nothing restored. A Pod whose volumes
//     are filled (below) has none: it comes before its owners, which adopt it; a Job
//     that adopts one keeps the selector it had, as a manual one, which the Pod matches.
//  10. StepLabel: velero.io/backup-name and velero.io/restore-name, as Velero labels
//     what it restores.
//  11. StepCreate: it is created through the dynamic client; AlreadyExists is handled by
//     the Existing policy (adopt, update or fail). Transient errors (429, 5xx, timeouts,
//     connections refused or reset) are retried with jittered backoff for as long as
//     the object's ItemTimeout allows.
//  12. StepStatus: status is written as Selection.RestoreStatus and the object's
//     velero.io/restore-status annotation say.
//  13. StepManagedFields: an object the restore created is given the managed fields
//     its backup recorded, with a merge patch, as Velero gives them back: the API
//     server keeps none a create carries, and would leave the restore the manager of
//     every field, so that the next server-side apply of a new value by the object's
//     own manager (Helm, a GitOps controller) failed with a conflict. An owner
//     reference's entry names the owner's new UID, or goes with the reference.
//  14. StepOperations: the asynchronous operations plugins' Execute started on it
//     (riav2.AsyncAction) are polled until they complete, with backoff; one that fails
//     or outlasts ItemOperationTimeout (it is then cancelled) fails the object, and
//     cancelling the restore cancels those under way. So exactly its dependents wait
//     for them. The journal records them: a resumed restore polls them again. An
//     operation of an object that fails before it is followed is cancelled.
//  15. StepPodVolumes: a Pod whose volumes a file-system backup holds has them filled
//     (Extensions.PodVolumes, Velero's node-agent through package velero) within
//     ItemOperationTimeout; it is done once they are.
//  16. StepExecHooks: a restored Pod's exec hooks run once each one's container is
//     running (or ready), through Target.Exec (pods/exec); onError Fail fails the Pod,
//     Continue is a warning. Its dependents wait for them; the journal records that
//     they ran.
//  17. StepReady: its dependents start only once it is ready (package readiness).
//
// Guarantees:
//
//   - Nothing twice. Every created object carries the annotation SourceUIDAnnotation; an
//     AlreadyExists for an object bearing this run's source UID is the same object (a
//     response lost to a timeout, or a run that crashed) and is taken as restored.
//   - Resume. With a Journal (OpenJournal for a file), source-to-new UID mappings are
//     appended as objects are restored (fsync'd in batches; a torn last line is
//     tolerated). Run again with the same journal and the restore continues where it
//     stopped. OpenClusterJournal keeps one in ConfigMaps, for a restore that another
//     process may carry on: only what the target cannot tell (operations, hooks run).
//     An object the journal holds whose managed fields the target lacks (the run
//     stopped between its create and StepManagedFields) is given them then.
//   - Failure isolation. A failed object skips only its descendants, reported with the
//     chain that blocked them. A panic in a plugin's call is that object's failure (a
//     *PluginError wrapping a *scheduler.PanicError). A panic anywhere else in a step is
//     a fault of the restore: nothing new starts, and Apply returns it with the report.
package restore
