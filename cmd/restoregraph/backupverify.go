package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/restoregraph/restoregraph/backup"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/restore"
)

// manifestBeside is where the backup command writes the manifest beside a tarball:
// nightly.tar.gz's is nightly.manifest.json.gz.
func manifestBeside(tarball string) string {
	return filepath.Join(filepath.Dir(tarball), backupName(tarball)+".manifest.json.gz")
}

func newBackupCmd() *cobra.Command {
	var out, mode, admissionNS, endpoint, locationName, veleroNS string
	var ff filterFlags
	t := &target{flags: genericclioptions.NewConfigFlags(true)}
	cmd := &cobra.Command{
		Use:   "backup -o FILE|URL",
		Short: "Write a Velero-format backup of the cluster, with its manifest",
		Long: `Writes every listable resource the cluster serves, at every version it serves (the
preferred one marked), as a Velero backup tarball (format 1.1.0), selected by the same
flags as restore. The manifest is written inside the tarball and beside it. A resource
whose list fails makes the backup incomplete: it is named, and the exit code is 1.

-o s3://BUCKET/PREFIX/NAME (or file:///DIR/PREFIX/NAME) writes it where Velero keeps
backups, PREFIX/backups/NAME/NAME.tar.gz, with what Velero's backup sync reads beside it
(velero-backup.json, the resource list, the log) and the manifest (NAME-manifest.json.gz),
so that a Velero server whose location is that bucket and prefix lists and restores it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return badInput("-o FILE|URL is required")
			}
			spec, err := ff.spec()
			if err != nil {
				return err
			}
			var loc backupLocation
			local := out
			if strings.Contains(out, "://") {
				if loc, err = parseBackupLocation(out, endpoint); err != nil {
					return err
				}
				dir, err := os.MkdirTemp("", "restoregraph-backup-*")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				local = filepath.Join(dir, backupName(out)+".tar.gz")
			} else if endpoint != "" {
				return badInput("--s3-endpoint is for -o s3://...")
			}
			started := time.Now()
			cfg, stop, err := t.config()
			if err != nil {
				return err
			}
			defer stop()
			dyn, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return err
			}
			disc, err := discovery.NewDiscoveryClientForConfig(cfg)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			tmp := local + ".partial"
			f, err := os.Create(tmp)
			if err != nil {
				return badInput("%w", err)
			}
			defer os.Remove(tmp)
			adm, err := newAdmitter(mode, admissionNS, cfg)
			if err != nil {
				return err
			}
			res, err := backup.Run(ctx, backup.Source{Dynamic: dyn, Discovery: disc}, f, backup.Options{Filter: spec,
				SpillDir: filepath.Dir(local), Admitter: adm, Name: backupName(out)})
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return &exitError{code: exitBadInput, err: err}
			}
			if err := os.Rename(tmp, local); err != nil {
				return err
			}
			var log bytes.Buffer
			w := io.MultiWriter(cmd.OutOrStdout(), &log)
			beside := manifestBeside(out)
			if loc.url != "" {
				beside = loc.beside(backupName(out) + "-manifest.json.gz")
			} else if err := manifest.WriteFile(beside, res.Manifest); err != nil {
				return err
			}
			fmt.Fprintf(w, "%d objects (%d bodies, every served version) written to %s; manifest beside it in %s; %d left out by the filter\n",
				res.Objects, res.Copies, out, beside, res.Excluded)
			for _, x := range res.Warnings {
				fmt.Fprintf(w, "warning: %s\n", x)
			}
			for _, e := range res.Incomplete {
				fmt.Fprintf(w, "incomplete: %v\n", e)
			}
			if loc.url != "" {
				k := keptAsVelero{name: backupName(out), namespace: veleroNS, location: locationName, filter: ff,
					started: started, completed: time.Now(), result: res, log: log.Bytes()}
				if err := putBackup(ctx, loc, local, k); err != nil {
					return err
				}
			}
			if len(res.Incomplete) > 0 {
				return &exitError{code: exitIncomplete, err: fmt.Errorf("the backup is incomplete: %d list(s) failed", len(res.Incomplete))}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the backup tarball to write, or a URL where Velero keeps backups: s3://BUCKET/PREFIX/NAME, file:///DIR/PREFIX/NAME")
	cmd.Flags().StringVar(&endpoint, "s3-endpoint", "", "the address of an S3-compatible store for -o s3://..., with path-style requests")
	cmd.Flags().StringVar(&locationName, "location-name", "default", "for -o URL: the BackupStorageLocation velero-backup.json names, the one whose bucket and prefix the URL are")
	cmd.Flags().StringVar(&veleroNS, "velero-namespace", "velero", "for -o URL: the namespace velero-backup.json names")
	ff.add(cmd.Flags(), "back up")
	cmd.Flags().StringVar(&mode, "admission", "cluster", "admit the backup, as a reader of what it backs up, against other operations on the cluster: cluster, local or off")
	cmd.Flags().StringVar(&admissionNS, "admission-namespace", "restoregraph-admission", "the namespace of the admission Leases")
	t.addFlags(cmd)
	return cmd
}

func newVerifyCmd() *cobra.Command {
	var output string
	var rf restoreFlags
	t := &target{flags: genericclioptions.NewConfigFlags(true)}
	cmd := &cobra.Command{
		Use:   "verify --backup FILE|URL | --from-backup NAME",
		Short: "Check that the cluster holds what restoring the backup makes",
		Long: `Checks, with the same flags as restore, that every object the restore makes exists,
that its ownerReferences name live objects, and that what the restore made holds what
it makes of the backup: the body at the chosen version, sanitized, mapped and passed
through the restore item actions (fields the server adds are not compared). Exit code
0 only when everything holds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return badInput("-o must be text or json, not %q", output)
			}
			s, err := rf.open(cmd, t)
			if err != nil {
				return err
			}
			defer s.close()
			b, tgt, ctx, opts := s.backup, s.target, s.ctx, s.opts
			rep, err := restore.Verify(ctx, tgt, b, opts)
			if err != nil {
				return &exitError{code: exitBadInput, err: err}
			}
			if output == "json" {
				if err := writeJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
			} else {
				printVerify(cmd.OutOrStdout(), rep)
			}
			if !rep.OK() {
				return &exitError{code: exitIncomplete, err: fmt.Errorf("%d missing, %d differ", rep.Summary[restore.Missing], rep.Summary[restore.Differs])}
			}
			return nil
		},
	}
	rf.add(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	t.addFlags(cmd)
	return cmd
}

func printVerify(w io.Writer, rep *restore.VerifyReport) {
	for _, o := range rep.Objects {
		if o.Verdict == restore.Verified {
			continue
		}
		ns, name := o.InTarget()
		fmt.Fprintf(w, "%-8s %s %s: %s\n", o.Verdict, o.Kind, qualified(ns, name), strings.Join(o.Problems, "; "))
	}
	fmt.Fprintf(w, "%d objects: %d verified, %d replaced by their controllers, %d missing, %d differ\n", len(rep.Objects),
		rep.Summary[restore.Verified], rep.Summary[restore.Replaced], rep.Summary[restore.Missing], rep.Summary[restore.Differs])
}
