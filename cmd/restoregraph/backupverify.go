package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/backup"
	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/plugin/velerohost"
	"github.com/restoregraph/restoregraph/restore"
)

// manifestBeside is where the backup command writes the manifest beside a tarball:
// nightly.tar.gz's is nightly.manifest.json.gz.
func manifestBeside(tarball string) string {
	return filepath.Join(filepath.Dir(tarball), backupName(tarball)+".manifest.json.gz")
}

func newBackupCmd() *cobra.Command {
	var out, mode, admissionNS, endpoint, locationName, veleroNS, storageLocation, name, pluginDir string
	var pluginPaths []string
	var ff filterFlags
	t := &target{flags: genericclioptions.NewConfigFlags(true)}
	cmd := &cobra.Command{
		Use:   "backup -o FILE|URL | --storage-location LOCATION --name NAME --plugins DIR",
		Short: "Write a Velero-format backup of the cluster, with its manifest",
		Long: `Writes every listable resource the cluster serves, at every version it serves (the
preferred one marked), as a Velero backup tarball (format 1.1.0), selected by the same
flags as restore. The manifest is written inside the tarball and beside it. A resource
whose list fails makes the backup incomplete: it is named, and the exit code is 1.

-o s3://BUCKET/PREFIX/NAME (or file:///DIR/PREFIX/NAME) writes it where Velero keeps
backups, PREFIX/backups/NAME/NAME.tar.gz, with what Velero's backup sync reads beside it
(velero-backup.json, the resource list, the log) and the manifest (NAME-manifest.json.gz),
so that a Velero server whose location is that bucket and prefix lists and restores it.

--storage-location LOCATION --name NAME writes the same into one of Velero's
BackupStorageLocations, read from the cluster backed up, through the location's own
object-store plugin (one of the executables of --plugins), configured as Velero
configures it: any store Velero supports, with the location's credentials. A ReadOnly
location is refused, as Velero refuses it. A backup already there under that name is
never written over.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			byLocation := storageLocation != ""
			switch {
			case out == "" && !byLocation:
				return badInput("-o FILE|URL or --storage-location LOCATION is required")
			case out != "" && byLocation:
				return badInput("-o and --storage-location each say where the backup goes: give one")
			case byLocation && name == "":
				return badInput("--storage-location needs --name, the backup's name in Velero")
			case byLocation && pluginDir == "" && len(pluginPaths) == 0:
				return badInput("--storage-location writes through the location's object-store plugin: give the directory of Velero's plugins with --plugins, or the plugin with --plugin")
			case !byLocation && (name != "" || pluginDir != "" || len(pluginPaths) > 0):
				return badInput("--name, --plugins and --plugin are for --storage-location")
			case byLocation && endpoint != "":
				return badInput("--s3-endpoint is for -o s3://...: a location reaches its store as it says")
			}
			if !byLocation {
				name = backupName(out)
			}
			if msgs := validation.IsDNS1123Subdomain(name); byLocation && len(msgs) > 0 {
				return badInput("--name %q: %s", name, strings.Join(msgs, "; "))
			}
			spec, err := ff.spec()
			if err != nil {
				return err
			}
			var loc backupLocation
			if strings.Contains(out, "://") {
				if loc, err = parseBackupLocation(out, endpoint); err != nil {
					return err
				}
			} else if endpoint != "" {
				return badInput("--s3-endpoint is for -o s3://...")
			}
			started := time.Now()
			cfg, stop, err := t.config()
			if err != nil {
				return err
			}
			defer stop()
			ctx, cancel := signalContext()
			defer cancel()

			// Where it goes is settled, and found free, before anything is read.
			var dest *destination
			switch {
			case byLocation:
				rf := restoreFlags{pluginDir: pluginDir, pluginPaths: pluginPaths}
				host, commands, stopHost, err := rf.pluginHost(cfg, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				defer stopHost()
				if host == nil {
					return badInput("--plugins %s holds no executable", pluginDir)
				}
				d, closeStore, err := locationDestination(ctx, cfg, host, commands, veleroNS, storageLocation, name)
				if err != nil {
					return err
				}
				defer closeStore()
				dest = &d
			case loc.url != "":
				d, err := loc.destination(ctx, locationName)
				if err != nil {
					return err
				}
				dest = &d
			}
			local := out
			if dest != nil {
				if err := dest.free(ctx, name); err != nil {
					return err
				}
				dir, err := os.MkdirTemp("", "restoregraph-backup-*")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				local = filepath.Join(dir, name+".tar.gz")
			}
			dyn, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return err
			}
			disc, err := discovery.NewDiscoveryClientForConfig(cfg)
			if err != nil {
				return err
			}
			tmp := local + ".partial"
			f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600) // Secrets are in it
			if err != nil {
				return badInput("%w", err)
			}
			defer os.Remove(tmp)
			adm, err := newAdmitter(mode, admissionNS, cfg)
			if err != nil {
				return err
			}
			res, err := backup.Run(ctx, backup.Source{Dynamic: dyn, Discovery: disc}, f, backup.Options{Filter: spec,
				SpillDir: filepath.Dir(local), Admitter: adm, Name: name})
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
			written, beside := out, manifestBeside(out)
			if dest != nil {
				written, beside = dest.where+" ("+dest.key+")", dest.beside(name+"-manifest.json.gz")
			} else if err := manifest.WriteFile(beside, res.Manifest); err != nil {
				return err
			}
			fmt.Fprintf(w, "%d objects (%d bodies, every served version) written to %s; manifest beside it in %s; %d left out by the filter\n",
				res.Objects, res.Copies, written, beside, res.Excluded)
			for _, x := range res.Warnings {
				fmt.Fprintf(w, "warning: %s\n", x)
			}
			for _, e := range res.Incomplete {
				fmt.Fprintf(w, "incomplete: %v\n", e)
			}
			if dest != nil {
				k := keptAsVelero{name: name, namespace: veleroNS, location: dest.location, filter: ff,
					started: started, completed: time.Now(), result: res, log: log.Bytes()}
				if err := putBackup(ctx, *dest, local, k); err != nil {
					return err
				}
			}
			if len(res.Incomplete) > 0 {
				return &exitError{code: exitIncomplete, err: fmt.Errorf("the backup is incomplete: %d list(s) failed", len(res.Incomplete))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "the backup tarball to write, or a URL where Velero keeps backups: s3://BUCKET/PREFIX/NAME, file:///DIR/PREFIX/NAME")
	f.StringVar(&endpoint, "s3-endpoint", "", "the address of an S3-compatible store for -o s3://..., with path-style requests")
	f.StringVar(&locationName, "location-name", "default", "for -o URL: the BackupStorageLocation velero-backup.json names, the one whose bucket and prefix the URL are")
	f.StringVar(&storageLocation, "storage-location", "", "write the backup into this BackupStorageLocation of Velero's, through its object-store plugin (with --name and --plugins)")
	f.StringVar(&name, "name", "", "for --storage-location: the backup's name in Velero")
	f.StringVar(&pluginDir, "plugins", "", "for --storage-location: a directory of Velero plugin executables, as Velero's /plugins, among them the location's object store")
	f.StringArrayVar(&pluginPaths, "plugin", nil, "for --storage-location: a Velero plugin executable (repeatable)")
	f.StringVar(&veleroNS, "velero-namespace", "velero", "the namespace Velero runs in: its locations and their Secrets, and the one velero-backup.json names")
	ff.add(f, "back up")
	f.StringVar(&mode, "admission", "cluster", "admit the backup, as a reader of what it backs up, against other operations on the cluster: cluster, local or off")
	f.StringVar(&admissionNS, "admission-namespace", "restoregraph-admission", "the namespace of the admission Leases")
	t.addFlags(cmd)
	return cmd
}

// locationDestination opens BackupStorageLocation name of Velero's, in the cluster cfg
// reaches, through its object-store plugin among commands, for a backup to be written
// there.
func locationDestination(ctx context.Context, cfg *rest.Config, host *velerohost.Host, commands [][]string, namespace, location, name string) (
	destination, func(), error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return destination{}, nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return destination{}, nil, err
	}
	v := velerohost.Velero{Dynamic: dyn, Secrets: cs.CoreV1(), Namespace: namespace}
	loc, err := v.Location(ctx, location)
	if err == nil {
		err = loc.Writable()
	}
	if err != nil {
		return destination{}, nil, veleroError(err)
	}
	store, err := host.OpenLocation(ctx, v, loc, commands...)
	if err != nil {
		return destination{}, nil, veleroError(err)
	}
	return destination{store: storePutter{store}, key: archive.TarballKey(loc.Prefix, name), location: loc.Name,
		where: fmt.Sprintf("location %s/%s (%s, bucket %s)", namespace, loc.Name, loc.Provider, loc.Bucket)}, func() { store.Close() }, nil
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
			p, err := s.makePlan()
			if err != nil {
				return err
			}
			rep, err := restore.Verify(s.ctx, p, s.target, s.run)
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
