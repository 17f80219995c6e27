package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero"
)

// session is what plan, restore and verify open alike: the backup, the target, the
// options the flags make, and a context that an interrupt cancels.
type session struct {
	backup *archive.Backup
	velero *veleroSource // the backup was read through Velero
	// podVolumes fills the file-system backups' volumes, when the backup was read
	// through Velero.
	podVolumes *velero.PodVolumeRestorer
	target     restore.Target
	ctx        context.Context
	plan       restore.PlanOptions
	run        restore.RunOptions
	saved      *restore.SavedPlan // --plan
	replan     bool
	warn       io.Writer
	close      func()
}

// makePlan plans the restore, or opens the saved plan: refused, with what changed, when
// it no longer holds (unless --replan).
func (s *session) makePlan() (*restore.Plan, error) {
	if s.saved == nil {
		p, err := restore.NewPlan(s.ctx, s.backup, s.target, s.plan)
		if err != nil {
			return nil, &exitError{code: exitBadInput, err: err}
		}
		return p, nil
	}
	p, err := s.saved.Open(s.ctx, s.backup, s.target, s.plan.Extensions)
	var changed *restore.PlanChangedError
	switch {
	case errors.As(err, &changed) && s.replan:
		for _, c := range changed.Changes {
			fmt.Fprintf(s.warn, "restoregraph: warning: replanned: %s\n", c)
		}
	case errors.As(err, &changed):
		var b strings.Builder
		fmt.Fprintf(&b, "the plan no longer holds (--replan goes on with the plan as it is now):")
		for _, c := range changed.Changes {
			b.WriteString("\n  " + c)
		}
		return nil, &exitError{code: exitBadInput, err: errors.New(b.String())}
	case err != nil:
		return nil, &exitError{code: exitBadInput, err: err}
	}
	return p, nil
}

// open reads the backup, connects to the target and starts the plugins; the session's
// close undoes all three. A backup named by --backup is read first, so that a wrong one
// is told before the target is reached; one named through Velero (--from-backup,
// --from-schedule) is read once the plugins that reach its location have started.
func (f *restoreFlags) open(cmd *cobra.Command, t *target) (s *session, err error) {
	ctx, cancel := signalContext()
	warn := cmd.ErrOrStderr()
	closers := []func(){cancel}
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	if f.fromRestoreFile != "" {
		if err := f.readVeleroRestore(cmd); err != nil {
			return nil, err
		}
	}
	var saved *restore.SavedPlan
	if f.planFile != "" {
		if saved, err = f.readPlan(cmd); err != nil {
			return nil, err
		}
	} else if f.replan {
		return nil, badInput("--replan goes with --plan")
	}
	byName, err := f.velero.check(f.backup, f.s3Endpoint, f.pluginDir != "" || len(f.pluginPaths) > 0, t.embedded)
	if err != nil {
		return nil, err
	}
	var b *archive.Backup
	var src *veleroSource
	var volumes []restore.Volume
	if !byName {
		var closeBackup func()
		if b, closeBackup, err = readBackup(ctx, f.backup, f.s3Endpoint, warn); err != nil {
			return nil, err
		}
		closers = append(closers, closeBackup)
		f.name = backupName(f.backup)
		if volumes, err = backupVolumes(ctx, f.backup, f.s3Endpoint); err != nil {
			return nil, err
		}
	}
	tgt, cfg, stopTarget, err := t.restoreTarget()
	if err != nil {
		return nil, err
	}
	closers = append(closers, stopTarget)
	host, commands, stopHost, err := f.pluginHost(cfg, warn)
	if err != nil {
		return nil, err
	}
	closers = append(closers, stopHost)
	if byName {
		if host == nil {
			return nil, badInput("--plugins %s holds no executable: --from-backup and --from-schedule read the backup through its location's object-store plugin", f.pluginDir)
		}
		var closeBackup func()
		if b, src, closeBackup, err = f.velero.read(ctx, cfg, host, commands, warn); err != nil {
			return nil, err
		}
		f.name, volumes = src.backup, src.volumes
		closers = append(closers, closeBackup)
	}
	po, ro, err := f.restoreOptions(ctx, cfg, warn, saved == nil)
	if err != nil {
		return nil, err
	}
	ro.Logger = logger(cmd)
	po.Volumes = volumes
	if host != nil && nativeSnapshots(volumes) && (po.Selection.RestorePVs == nil || *po.Selection.RestorePVs) {
		// The VolumeSnapshotLocations are Velero's, where the backup was read from or
		// else in the target.
		client, err := f.velero.client(cfg)
		if err != nil {
			return nil, err
		}
		snapshotters, closeSnapshotters := client.VolumeSnapshotters(ctx, host, volumes, commands...)
		po.Extensions.VolumeSnapshotters = snapshotters
		closers = append(closers, closeSnapshotters)
	}
	var podVolumes *velero.PodVolumeRestorer
	if src != nil {
		// The backup's PodVolumeBackups are read where it was; the node-agent that fills
		// the volumes is the target's.
		target := velero.Client{Dynamic: tgt.Dynamic, Namespace: f.velero.namespace}
		pv, err := src.velero.PodVolumeRestorer(ctx, &velero.Backup{Name: src.backup, Location: src.store.Location}, target)
		if err != nil {
			return nil, veleroError(err)
		}
		po.Extensions.PodVolumes, podVolumes = pv, pv
	}
	if host != nil {
		if po.Extensions.Plugins, err = f.register(ctx, host, commands, warn); err != nil {
			return nil, err
		}
	}
	return &session{backup: b, velero: src, podVolumes: podVolumes, target: tgt, ctx: ctx, plan: po, run: ro, saved: saved, replan: f.replan, warn: warn, close: closeAll}, nil
}

// readPlan reads the --plan file. Its backup is read from where the plan says, unless
// --backup or --from-backup names it; the flags its selection stands for cannot be given.
func (f *restoreFlags) readPlan(cmd *cobra.Command) (*restore.SavedPlan, error) {
	var given []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if _, ok := fl.Annotations[selectionFlag]; ok {
			given = append(given, "--"+fl.Name)
		}
	})
	if len(given) > 0 {
		return nil, badInput("--plan carries its selection: %s cannot be given with it", strings.Join(given, ", "))
	}
	file, err := os.Open(f.planFile)
	if err != nil {
		return nil, badInput("--plan: %w", err)
	}
	defer file.Close()
	saved, err := restore.ReadPlan(file)
	if err != nil {
		return nil, badInput("--plan %s: %w", f.planFile, err)
	}
	if f.backup == "" && f.velero.backup == "" && f.velero.schedule == "" {
		if saved.Backup.Location == "" {
			return nil, badInput("--plan %s names no backup location: give --backup or --from-backup", f.planFile)
		}
		f.backup = saved.Backup.Location
	}
	return saved, nil
}

// openPlan opens what the flags name and plans the restore, for a command whose -o is
// output, one of outputs; closing the session is the caller's.
func (f *restoreFlags) openPlan(cmd *cobra.Command, t *target, output string, outputs ...string) (*session, *restore.Plan, error) {
	if !slices.Contains(outputs, output) {
		return nil, nil, badInput("-o must be one of %s, not %q", strings.Join(outputs, ", "), output)
	}
	s, err := f.open(cmd, t)
	if err != nil {
		return nil, nil, err
	}
	p, err := s.makePlan()
	if err != nil {
		s.close()
		return nil, nil, err
	}
	return s, p, nil
}

// nativeSnapshots says whether a native snapshot is among vols' records.
func nativeSnapshots(vols []restore.Volume) bool {
	return slices.ContainsFunc(vols, func(v restore.Volume) bool { return v.Method == restore.VolumeNativeSnapshot })
}
