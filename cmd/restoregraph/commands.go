package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/manifest"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"github.com/restoregraph/restoregraph/plugin/velerohost"
	"github.com/restoregraph/restoregraph/restore"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newPlanCmd() *cobra.Command {
	var output string
	var rf restoreFlags
	t := &target{flags: genericclioptions.NewConfigFlags(true)}
	cmd := &cobra.Command{
		Use:   "plan --backup FILE|URL | --from-backup NAME",
		Short: "Show what a restore would do, without writing anything",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" && output != "dot" {
				return badInput("-o must be text, json or dot, not %q", output)
			}
			s, err := rf.open(cmd, t)
			if err != nil {
				return err
			}
			defer s.close()
			p, err := s.makePlan()
			if err != nil {
				return err
			}
			conflicts, err := p.Conflicts(s.ctx, s.run)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch output {
			case "json":
				return p.WriteJSON(out)
			case "dot":
				dot, err := p.DOT()
				if err != nil {
					return err
				}
				_, err = out.Write(dot)
				return err
			}
			printPlan(out, p, conflicts)
			return nil
		},
	}
	rf.add(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text, json or dot")
	t.addFlags(cmd)
	return cmd
}

func printPlan(out io.Writer, p *restore.Plan, conflicts []admission.Conflict) {
	w := bufio.NewWriterSize(out, 256<<10) // a line per object: a million lines, not a million writes
	defer w.Flush()
	fmt.Fprintf(w, "%d objects, %d resource types\n\nVersions:\n", p.Len(), len(p.Versions))
	for _, v := range p.Versions {
		gr := v.Resource
		if v.Group != "" {
			gr += "." + v.Group
		}
		fmt.Fprintf(w, "  %-50s %-10s %s\n", gr, v.Version, v.Explanation)
	}
	fmt.Fprintf(w, "\nOrder (level: object <- dependencies):\n")
	name := func(uid types.UID) string {
		o, ok := p.Object(uid)
		if !ok {
			return ""
		}
		return o.Kind + " " + qualified(o.Namespace, o.Name)
	}
	for o := range p.Objects() {
		var deps []string
		for _, d := range o.DependsOn {
			deps = append(deps, fmt.Sprintf("%s (%s)", name(d.UID), d.Reason))
		}
		fmt.Fprintf(w, "  %3d: %s %s", o.Level, o.Kind, qualified(o.Namespace, o.Name))
		if len(deps) > 0 {
			fmt.Fprintf(w, " <- %s", strings.Join(deps, ", "))
		}
		if len(o.Folded) > 0 {
			fmt.Fprintf(w, " (also listed as %s: restored once)", strings.Join(o.Folded, ", "))
		}
		if o.Excluded != "" {
			fmt.Fprintf(w, " [not restored: %s]", o.Excluded)
		}
		if len(o.Modifiers) > 0 {
			var rules []string
			for _, c := range o.Modifiers {
				r := strconv.Itoa(c.Rule)
				if c.Conditional {
					r += " if its matches hold"
				}
				rules = append(rules, r)
			}
			fmt.Fprintf(w, " [modified by rule %s]", strings.Join(rules, ", "))
		}
		fmt.Fprintln(w)
	}
	if len(p.Plugins) > 0 {
		fmt.Fprintln(w, "\nPlugins (restore item actions, in the order they run):")
		for _, pl := range p.Plugins {
			fmt.Fprintf(w, "  %-45s %-3s applies to %s\n", pl.Name, pl.Version, selectorText(pl.AppliesTo))
		}
	}
	for _, c := range conflicts {
		fmt.Fprintf(w, "\nThe restore would wait for %v\n", c)
	}
	var cp []string
	for _, u := range p.CriticalPath {
		cp = append(cp, name(u))
	}
	fmt.Fprintf(w, "\nCritical path: %s\n", strings.Join(cp, " -> "))
	for _, c := range p.Cycles {
		fmt.Fprintf(w, "Cycle: %s\n", c.Text)
	}
	if len(p.Warnings) > 0 {
		fmt.Fprintln(w, "\nWarnings:")
		for _, x := range p.Warnings {
			fmt.Fprintln(w, "  "+x)
		}
	}
}

func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

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
			record = record && s.velero != nil
			if record {
				// Named now, and checked against Velero's restores before anything is written.
				if opts.Name == "" {
					opts.Name = rf.name + "-" + time.Now().UTC().Format("20060102150405")
				}
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
			prog := newProgress(cmd.ErrOrStderr(), b.Manifest().Len())
			if t.limiter != nil {
				prog.throttle = t.limiter.Waited
				prog.reach = &t.reach
			}
			opts.OnEvent = prog.event
			p, err := s.makePlan()
			if err != nil {
				return err
			}
			rep, err := restore.Apply(ctx, p, tgt, opts)
			prog.finish()
			if rep == nil {
				return &exitError{code: exitBadInput, err: err}
			}
			var log bytes.Buffer
			printReport(&log, rep)
			if output == "json" {
				if werr := rep.WriteJSON(cmd.OutOrStdout()); werr != nil {
					return werr
				}
			} else if _, werr := cmd.OutOrStdout().Write(log.Bytes()); werr != nil {
				return werr
			}
			if record {
				rec := restoreRecord(opts.Name, rf.name, rep, log.Bytes())
				var cm string
				if !strings.Contains(rf.modifiersConfigMap, "/") {
					cm = rf.modifiersConfigMap
				}
				spec, rerr := velerohost.SpecOf(p.Selection(), cm, opts.ItemOperationTimeout)
				if rerr == nil {
					rec.Spec = spec
					rerr = s.velero.velero.RecordRestore(ctx, s.velero.store, s.velero.location, rec)
				}
				if rerr != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "restoregraph: warning: the restore is not recorded in Velero: %v\n", rerr)
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "recorded in Velero as restore %s/%s (%s): velero restore describe %s --details\n",
						s.velero.velero.Namespace, opts.Name, rec.Phase(), opts.Name)
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
	f.BoolVar(&waitHealthy, "wait", false, "after the restore, wait until everything restored is healthy (kstatus Current), and fail if it is not")
	f.DurationVar(&waitTimeout, "wait-timeout", 5*time.Minute, "how long --wait waits")
	f.StringVarP(&output, "output", "o", "text", "text or json")
	f.BoolVar(&record, "record-in-velero", true, "with --from-backup or --from-schedule: record the restore as Velero records its own (a Restore object, and its results, "+
		"resource list and log in the backup's location), so that velero restore get|describe|logs show it")
	t.addFlags(cmd)
	return cmd
}

// restoreRecord is what Velero would keep of rep: each object the restore took on in
// the resource list with its outcome (created, updated, skipped when it existed, failed),
// failures and what they blocked as errors, warnings as warnings, by the namespace the
// object was restored into. What the plan left out is not listed, as Velero lists only
// what it took on.
func restoreRecord(name, backup string, rep *restore.Report, log []byte) velerohost.RestoreRecord {
	rec := velerohost.RestoreRecord{Name: name, Backup: backup, Started: rep.Started, Completed: rep.Finished, Log: log}
	for o := range rep.Objects() {
		if o.Status == restore.Skipped && (o.SkippedBy == restore.NonRestorable || o.SkippedBy == restore.ControllerManaged || o.SkippedBy == restore.Filtered) {
			continue
		}
		ns, nm := o.Namespace, o.Name
		if o.TargetNamespace != "" {
			ns = o.TargetNamespace
		}
		if o.TargetName != "" {
			nm = o.TargetName
		}
		what := schema.GroupResource{Group: o.Group, Resource: o.Resource}.String() + " " + qualified(ns, nm)
		outcome, there := velerohost.ItemFailed, true
		switch o.Status {
		case restore.Restored:
			outcome = velerohost.ItemCreated
		case restore.Updated:
			outcome = velerohost.ItemUpdated
		case restore.Adopted:
			outcome = velerohost.ItemSkipped // there already, left as it was
		case restore.Skipped:
			outcome, there = velerohost.ItemSkipped, false
			if o.SkippedBy == "" { // not a plugin's choice: what it needed failed
				rec.Errors.Add(ns, fmt.Sprintf("not restoring %s: %s", what, o.Reason))
			}
		default:
			there = false
			rec.Errors.Add(ns, fmt.Sprintf("error restoring %s: %s", what, o.Reason))
		}
		rec.Total++
		if there {
			rec.Restored++
		}
		rec.AddResource(o.Group, o.Version, o.Kind, ns, nm, outcome)
		for _, w := range o.Warnings {
			rec.Warnings.Add(ns, what+": "+w)
		}
	}
	rec.Warnings.Velero = rep.Warnings
	return rec
}

func printReport(w io.Writer, rep *restore.Report) {
	leftOut := map[string]int{} // by the plan's rule: one line each, not one per object
	for o := range rep.Unusual() {
		if o.Status == restore.Restored && len(o.Warnings) == 0 && len(o.Operations) == 0 && len(o.Hooks) == 0 {
			continue
		}
		if o.Status == restore.Skipped && (o.SkippedBy == restore.NonRestorable || o.SkippedBy == restore.ControllerManaged) {
			leftOut[o.SkippedBy]++
			continue
		}
		fmt.Fprintf(w, "%-9s %s %s", o.Status, o.Kind, qualified(o.Namespace, o.Name))
		if o.Reason != "" {
			fmt.Fprintf(w, ": %s", o.Reason)
		}
		fmt.Fprintln(w)
		for _, x := range o.Warnings {
			fmt.Fprintf(w, "          warning: %s\n", x)
		}
		for _, h := range o.Hooks {
			result := "ran"
			if h.Err != "" {
				result = "failed: " + h.Err
			}
			fmt.Fprintf(w, "          exec hook %s in container %s: %s\n", h.Source, h.Container, result)
		}
		for _, op := range o.Operations {
			fmt.Fprintf(w, "          operation %s of %s: %s after %s", op.ID, op.Plugin, op.Phase, op.Ended.Sub(op.Started).Round(time.Millisecond))
			if op.Progress != "" {
				fmt.Fprintf(w, " (%s)", op.Progress)
			}
			fmt.Fprintln(w)
		}
	}
	for _, by := range slices.Sorted(maps.Keys(leftOut)) {
		fmt.Fprintf(w, "Skipped   %d objects left to the target by %s (plan -o text lists them)\n", leftOut[by], by)
	}
	fmt.Fprintf(w, "%d objects in %s:", rep.Len(), rep.Finished.Sub(rep.Started).Round(time.Millisecond))
	for _, s := range []restore.Status{restore.Restored, restore.Adopted, restore.Updated, restore.Skipped, restore.Failed, restore.Cancelled} {
		if n := rep.Count(s); n > 0 {
			fmt.Fprintf(w, " %d %s", n, strings.ToLower(string(s)))
		}
	}
	fmt.Fprintln(w)
	if h := rep.Health; h != nil {
		fmt.Fprintf(w, "health after %s: %d healthy, %d not\n", h.Timeout, h.Healthy, len(h.NotHealthy))
		for _, o := range h.NotHealthy {
			fmt.Fprintf(w, "  not healthy: %s %s: %s\n", o.Kind, qualified(o.Namespace, o.Name), o.Status)
		}
	}
}

func newManifestCmd() *cobra.Command {
	var backup, endpoint, output string
	cmd := &cobra.Command{
		Use:   "manifest --backup FILE|URL [-o FILE]",
		Short: "Write the backup's manifest.json.gz",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			b, closeBackup, err := readBackup(ctx, backup, endpoint, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer closeBackup()
			if output == "" && strings.Contains(backup, "://") {
				return badInput("-o is required for a backup named by a URL")
			}
			if output == "" {
				output = strings.TrimSuffix(strings.TrimSuffix(backup, ".gz"), ".tar") + "-manifest.json.gz"
			}
			if output == "-" {
				return manifest.Encode(cmd.OutOrStdout(), b.Manifest())
			}
			if err := manifest.WriteFile(output, b.Manifest()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d items\n", output, b.Manifest().Len())
			return nil
		},
	}
	cmd.Flags().StringVar(&backup, "backup", "", backupUsage)
	cmd.Flags().StringVar(&endpoint, "s3-endpoint", "", s3EndpointUsage)
	cmd.Flags().StringVarP(&output, "output", "o", "", "where to write (.gz compresses; - for plain JSON on standard output)")
	return cmd
}

// selectorText reads a plugin's selector as a person would say it.
func selectorText(s ria.ResourceSelector) string {
	parts := []string{"resources " + orAll(s.IncludedResources)}
	if len(s.ExcludedResources) > 0 {
		parts = append(parts, "but "+strings.Join(s.ExcludedResources, ","))
	}
	if len(s.IncludedNamespaces) > 0 {
		parts = append(parts, "in namespaces "+strings.Join(s.IncludedNamespaces, ","))
	}
	if s.LabelSelector != "" {
		parts = append(parts, "labelled "+s.LabelSelector)
	}
	return strings.Join(parts, " ")
}

func orAll(names []string) string {
	if len(names) == 0 {
		return "*"
	}
	return strings.Join(names, ",")
}
