package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
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
			// Named now: it is given to plugins as Velero's Restore, and checked against
			// Velero's restores before anything is written.
			if opts.Name == "" {
				opts.Name = rf.name + "-" + time.Now().UTC().Format("20060102150405")
			}
			record = record && s.velero != nil
			if record {
				if err := s.velero.velero.CheckRestoreName(ctx, opts.Name); err != nil {
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
			if opts.Request, err = veleroRequest(rf, p, opts); err != nil {
				return err
			}
			rep, err := restore.Apply(ctx, p, tgt, opts)
			prog.Finish()
			if rep == nil {
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
				recordInVelero(cmd.ErrOrStderr(), s, p, rep, opts, rf.modifiersConfigMap)
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
func recordInVelero(warn io.Writer, s *session, p *restore.Plan, rep *restore.Report, opts restore.RunOptions, modifiersConfigMap string) {
	rec := velero.RecordOf(opts.Name, s.velero.backup, rep)
	var cm string
	if !strings.Contains(modifiersConfigMap, "/") {
		cm = modifiersConfigMap
	}
	spec, err := velero.SpecOf(p.Selection(), cm, opts.ItemOperationTimeout)
	if err == nil {
		rec.Spec = spec
		err = s.velero.velero.RecordRestore(s.ctx, s.velero.store, rec)
	}
	if err != nil {
		fmt.Fprintf(warn, "restoregraph: warning: the restore is not recorded in Velero: %v\n", err)
		return
	}
	fmt.Fprintf(warn, "recorded in Velero as restore %s/%s (%s): velero restore describe %s --details\n",
		s.velero.velero.Namespace, opts.Name, rec.Phase(), opts.Name)
}

// veleroRequest is the Velero Restore that plugins are told the restore carries out, as
// Velero's own actions read it: in --velero-namespace (where the backup's Backup object
// is), the spec the plan's selection makes (restorePVs, namespaceMapping, ...), and a
// UID made of its namespace and name, so that the restore run again under the same
// name (--restore-name) is the same Restore to them.
func veleroRequest(rf restoreFlags, p *restore.Plan, opts restore.RunOptions) (*ria.Restore, error) {
	var cm string
	if !strings.Contains(rf.modifiersConfigMap, "/") {
		cm = rf.modifiersConfigMap
	}
	spec, err := velero.SpecOf(p.Selection(), cm, opts.ItemOperationTimeout)
	if err != nil {
		return nil, err
	}
	return &ria.Restore{Namespace: rf.velero.namespace, Spec: spec,
		UID: types.UID(uuid.NewSHA1(uuid.NameSpaceURL, []byte("restoregraph/"+rf.velero.namespace+"/"+opts.Name)).String())}, nil
}
