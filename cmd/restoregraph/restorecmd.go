package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"github.com/restoregraph/restoregraph/progress"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero"
)

func newRestoreCmd() *cobra.Command {
	var (
		journal, output          string
		workers                  int
		itemTimeout, waitTimeout time.Duration
		operationTimeout         time.Duration
		waitHealthy, record      bool
		sparse                   optionalBool
		parallelFiles            int
		rf                       restoreFlags
	)
	t := &target{flags: genericclioptions.NewConfigFlags(true)}
	cmd := &cobra.Command{
		Use:   "restore --backup FILE|URL | --from-backup NAME",
		Short: "Restore a backup into the cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return badInput("-o must be text or json, not %q", output)
			}
			s, err := rf.open(cmd, t)
			if err != nil {
				return err
			}
			defer s.close()
			b, tgt, ctx, opts := s.backup, s.target, s.ctx, s.run
			opts.Workers, opts.ItemTimeout, opts.ItemOperationTimeout = workers, itemTimeout, operationTimeout
			if r := rf.fromRestore; r != nil && r.ItemOperationTimeout > 0 {
				if cmd.Flags().Changed("item-operation-timeout") {
					return badInput("--item-operation-timeout: the Restore of --from-velero-restore sets spec.itemOperationTimeout")
				}
				opts.ItemOperationTimeout = r.ItemOperationTimeout
			}
			// Always said, as velero restore create says it.
			uploader := &velerov1.UploaderConfigForRestore{WriteSparseFiles: sparse.value, ParallelFilesDownload: parallelFiles}
			if parallelFiles < 0 {
				return badInput("--parallel-files-download %d: negative", parallelFiles)
			}
			if r := rf.fromRestore; r != nil {
				if cmd.Flags().Changed("write-sparse-files") || cmd.Flags().Changed("parallel-files-download") {
					return badInput("--write-sparse-files, --parallel-files-download: the Restore of --from-velero-restore sets spec.uploaderConfig")
				}
				uploader = r.UploaderConfig
			}
			// Named now: it is given to plugins as Velero's Restore, and checked against
			// Velero's restores before anything is written.
			if opts.Name == "" {
				opts.Name = rf.name + "-" + time.Now().UTC().Format("20060102150405")
			}
			record = record && s.velero != nil
			if record {
				if err := s.velero.velero.CheckRestoreName(ctx, opts.Name, journal != ""); err != nil {
					return veleroError(err)
				}
			}
			if waitHealthy {
				opts.HealthTimeout = waitTimeout
			}
			if journal != "" {
				j, err := restore.OpenJournal(journal)
				if err != nil {
					return badInput("%w", err)
				}
				defer j.Close()
				opts.Journal = j
			}
			prog := progress.NewLine(cmd.ErrOrStderr(), b.Manifest().Len())
			if t.limiter != nil {
				prog.Throttle = t.limiter.Waited
				prog.Reach = &t.reach
			}
			opts.OnEvent = prog.Event
			p, err := s.makePlan()
			if err != nil {
				return err
			}
			spec, err := veleroSpec(rf, p, opts, uploader)
			if err != nil {
				return err
			}
			opts.Request = veleroRequest(rf, opts.Name, spec)
			// What Velero's node-agent and data movers are given for the restore, in Velero's
			// namespace of the target, is owned by the Restore: a PodVolumeRestore's
			// node-agent names the file that the Pod's restore-wait init container waits
			// for after its owner's UID, and fails one without an owner.
			ownedByRestore := velero.MovesData(p.Volumes) || p.FillsPodVolumes()
			if ownedByRestore && !record {
				return badInput("the backup's volumes are filled by data movement or Velero's node-agent, whose DataDownloads and PodVolumeRestores " +
					"are owned by the Restore: the restore must be recorded in Velero (--from-backup or --from-schedule, without --record-in-velero=false)")
			}
			var here *velero.Client // the Restore in the target, when Velero's objects are read from another cluster
			if record {
				// The Restore is there while the restore runs, under the UID plugins
				// are given: what they make for it is owned by it.
				uid, err := s.velero.velero.BeginRestore(ctx, opts.Name, s.velero.backup, spec, time.Now())
				if err != nil {
					return veleroError(err)
				}
				opts.Request.UID = uid
				if ownedByRestore && rf.velero.sourceKubeconfig != "" {
					// The Restore in the source cluster cannot own what is made here: the
					// restore is begun in the target's Velero too, and plugins are given
					// that Restore's UID.
					here = &velero.Client{Dynamic: tgt.Dynamic, Namespace: rf.velero.namespace}
					if opts.Request.UID, err = here.BeginRestore(ctx, opts.Name, s.velero.backup, spec, time.Now()); err != nil {
						failBegun(s.ctx, cmd.ErrOrStderr(), s.velero.velero, opts.Name, err)
						return veleroError(fmt.Errorf("in the target: %w", err))
					}
				}
				if s.podVolumes != nil {
					s.podVolumes.OwnedByRestore = true // deleted with the Restore, as Velero's are
				}
			}
			rep, err := restore.Apply(ctx, p, tgt, opts)
			prog.Finish()
			if rep == nil {
				if record {
					failBegun(s.ctx, cmd.ErrOrStderr(), s.velero.velero, opts.Name, err)
					if here != nil {
						failBegun(s.ctx, cmd.ErrOrStderr(), *here, opts.Name, err)
					}
				}
				return &exitError{code: exitBadInput, err: err}
			}
			write := rep.WriteText
			if output == "json" {
				write = rep.WriteJSON
			}
			if werr := write(cmd.OutOrStdout()); werr != nil {
				return werr
			}
			if record {
				recordInVelero(cmd.ErrOrStderr(), s, here, rep, opts.Name, spec)
			}
			if rep.OK() && velero.MovesData(p.Volumes) {
				// As Velero's restore does at its end; kept for a run again otherwise.
				v := velero.Client{Dynamic: tgt.Dynamic, Namespace: rf.velero.namespace}
				if derr := v.DeleteDataUploadResults(ctx, opts.Request.UID); derr != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "restoregraph: warning: %v\n", derr)
				}
			}
			if err != nil {
				return &exitError{code: exitIncomplete, err: err}
			}
			if !rep.OK() {
				if h := rep.Health; h != nil && len(h.NotHealthy) > 0 && rep.Summary[restore.Failed] == 0 {
					return &exitError{code: exitIncomplete, err: fmt.Errorf("%d objects not healthy after %s", len(h.NotHealthy), h.Timeout)}
				}
				return &exitError{code: exitIncomplete, err: fmt.Errorf("%d failed, %d skipped, %d cancelled", rep.Count(restore.Failed), rep.Count(restore.Skipped), rep.Count(restore.Cancelled))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	rf.add(f)
	f.IntVar(&workers, "workers", 16, "objects restored at once")
	f.DurationVar(&operationTimeout, "item-operation-timeout", 4*time.Hour, "how long an asynchronous operation a plugin starts may take, as Velero's: "+
		"one that outlasts it is cancelled and fails its object")
	f.DurationVar(&itemTimeout, "item-timeout", 5*time.Minute, "how long one object's own work may take, readiness included (a plugin's wait for its additional items has the plugin's timeout)")
	f.StringVar(&journal, "journal", "", "journal file that makes the restore resumable")
	f.Var(&sparse, "write-sparse-files", "whether the data movers write files sparse as they fill restored volumes, as Velero's (default false)")
	f.Lookup("write-sparse-files").NoOptDefVal = "true"
	f.IntVar(&parallelFiles, "parallel-files-download", 0, "files each data mover writes at once as it fills a restored volume, as Velero's (0: its node's CPUs)")
	f.BoolVar(&waitHealthy, "wait", false, "after the restore, wait until everything restored is healthy (kstatus Current), and fail if it is not")
	f.DurationVar(&waitTimeout, "wait-timeout", 5*time.Minute, "how long --wait waits")
	f.StringVarP(&output, "output", "o", "text", "text or json")
	f.BoolVar(&record, "record-in-velero", true, "with --from-backup or --from-schedule: record the restore as Velero records its own (a Restore object, and its results, "+
		"resource list and log in the backup's location), so that velero restore get|describe|logs show it")
	t.addFlags(cmd)
	return cmd
}

// recordInVelero records the restore rep of p as Velero records its own, in the backup's
// location and as a Restore object, so that velero restore describe and logs show it;
// what fails is a warning, for the restore itself is done.
func recordInVelero(warn io.Writer, s *session, here *velero.Client, rep *restore.Report, name string, spec map[string]any) {
	rec := velero.RecordOf(name, s.velero.backup, rep)
	rec.Spec = spec
	if here != nil {
		// Its results and log are in the backup's location, which the source's Velero
		// serves; the target's Restore says how it ended.
		if err := here.UpdateRestoreStatus(s.ctx, name, func(st *velerov1.RestoreStatus) { *st = rec.Status() }); err != nil {
			fmt.Fprintf(warn, "restoregraph: warning: restore %s stays InProgress in the target's Velero: %v\n", name, err)
		}
	}
	if err := s.velero.velero.RecordRestore(s.ctx, s.velero.store, rec); err != nil {
		fmt.Fprintf(warn, "restoregraph: warning: the restore is not recorded in Velero: %v\n", err)
		return
	}
	fmt.Fprintf(warn, "recorded in Velero as restore %s/%s (%s): velero restore describe %s --details\n",
		s.velero.velero.Namespace, name, rec.Phase(), name)
}

// failBegun marks the Restore BeginRestore made through v Failed, with err as its
// reason, for a restore that could not start.
func failBegun(ctx context.Context, warn io.Writer, v velero.Client, name string, err error) {
	if uerr := v.UpdateRestoreStatus(ctx, name, func(st *velerov1.RestoreStatus) {
		st.Phase, st.FailureReason = velerov1.RestorePhaseFailed, err.Error()
	}); uerr != nil {
		fmt.Fprintf(warn, "restoregraph: warning: restore %s stays InProgress in Velero: %v\n", name, uerr)
	}
}

// veleroSpec is the spec of the Velero Restore the restore of p carries out: what
// plugins read and what Velero records. It says the plan's selection (restorePVs,
// namespaceMapping, ...), the modifiers' ConfigMap when it is in Velero's namespace,
// the operation timeout and how data movers write files.
func veleroSpec(rf restoreFlags, p *restore.Plan, opts restore.RunOptions, uploader *velerov1.UploaderConfigForRestore) (map[string]any, error) {
	r := velero.RestoreSpec{Selection: p.Selection(), ItemOperationTimeout: opts.ItemOperationTimeout, UploaderConfig: uploader}
	if !strings.Contains(rf.modifiersConfigMap, "/") {
		r.ModifierConfigMap = rf.modifiersConfigMap
	}
	return velero.SpecOf(r)
}

// veleroRequest is the Velero Restore that plugins are told the restore carries out, as
// Velero's own actions read it: in --velero-namespace (where the backup's Backup object
// is), with spec, and a UID made of its namespace and name, so that the restore run
// again under the same name (--restore-name) is the same Restore to them.
func veleroRequest(rf restoreFlags, name string, spec map[string]any) *ria.Restore {
	return &ria.Restore{Namespace: rf.velero.namespace, Spec: spec,
		UID: types.UID(uuid.NewSHA1(uuid.NameSpaceURL, []byte("restoregraph/"+rf.velero.namespace+"/"+name)).String())}
}
