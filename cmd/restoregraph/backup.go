package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/velero"
	"github.com/restoregraph/restoregraph/velero/bucket"
)

// backupFlags are the backup command's flags but the filter and the target's.
type backupFlags struct {
	out, endpoint, locationName                string // -o, --s3-endpoint, --location-name
	storageLocation, name, veleroNS, pluginDir string // --storage-location and what it needs
	pluginPaths                                []string
	admission, admissionNS                     string
}

func newBackupCmd() *cobra.Command {
	var bf backupFlags
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
		RunE: func(cmd *cobra.Command, _ []string) error { return bf.run(cmd, t, ff) },
	}
	f := cmd.Flags()
	f.StringVarP(&bf.out, "output", "o", "", "the backup tarball to write, or a URL where Velero keeps backups: s3://BUCKET/PREFIX/NAME, file:///DIR/PREFIX/NAME")
	f.StringVar(&bf.endpoint, "s3-endpoint", "", "the address of an S3-compatible store for -o s3://..., with path-style requests")
	f.StringVar(&bf.locationName, "location-name", "default", "for -o URL: the BackupStorageLocation velero-backup.json names, the one whose bucket and prefix the URL are")
	f.StringVar(&bf.storageLocation, "storage-location", "", "write the backup into this BackupStorageLocation of Velero's, through its object-store plugin (with --name and --plugins)")
	f.StringVar(&bf.name, "name", "", "for --storage-location: the backup's name in Velero")
	f.StringVar(&bf.pluginDir, "plugins", "", "for --storage-location: a directory of Velero plugin executables, as Velero's /plugins, among them the location's object store")
	f.StringArrayVar(&bf.pluginPaths, "plugin", nil, "for --storage-location: a Velero plugin executable (repeatable)")
	f.StringVar(&bf.veleroNS, "velero-namespace", "velero", "the namespace Velero runs in: its locations and their Secrets, and the one velero-backup.json names")
	ff.add(f, "back up")
	f.StringVar(&bf.admission, "admission", "cluster", "admit the backup, as a reader of what it backs up, against other operations on the cluster: cluster, local or off")
	f.StringVar(&bf.admissionNS, "admission-namespace", "restoregraph-admission", "the namespace of the admission Leases")
	t.addFlags(cmd)
	return cmd
}

// check refuses flags that do not go together, and returns the backup's name.
func (bf *backupFlags) check() (string, error) {
	byLocation := bf.storageLocation != ""
	switch {
	case bf.out == "" && !byLocation:
		return "", badInput("-o FILE|URL or --storage-location LOCATION is required")
	case bf.out != "" && byLocation:
		return "", badInput("-o and --storage-location each say where the backup goes: give one")
	case byLocation && bf.name == "":
		return "", badInput("--storage-location needs --name, the backup's name in Velero")
	case byLocation && bf.pluginDir == "" && len(bf.pluginPaths) == 0:
		return "", badInput("--storage-location writes through the location's object-store plugin: give the directory of Velero's plugins with --plugins, or the plugin with --plugin")
	case !byLocation && (bf.name != "" || bf.pluginDir != "" || len(bf.pluginPaths) > 0):
		return "", badInput("--name, --plugins and --plugin are for --storage-location")
	case byLocation && bf.endpoint != "":
		return "", badInput("--s3-endpoint is for -o s3://...: a location reaches its store as it says")
	case !byLocation && !bucket.IsURL(bf.out) && bf.endpoint != "":
		return "", badInput("--s3-endpoint is for -o s3://...")
	case !byLocation:
		return backupName(bf.out), nil
	}
	if msgs := validation.IsDNS1123Subdomain(bf.name); len(msgs) > 0 {
		return "", badInput("--name %q: %s", bf.name, strings.Join(msgs, "; "))
	}
	return bf.name, nil
}

func (bf *backupFlags) run(cmd *cobra.Command, t *target, ff filterFlags) error {
	name, err := bf.check()
	if err != nil {
		return err
	}
	spec, err := ff.spec()
	if err != nil {
		return err
	}
	var u bucket.URL
	if bucket.IsURL(bf.out) {
		if u, err = parseURL("-o", bf.out, bf.endpoint); err != nil {
			return err
		}
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
	case bf.storageLocation != "":
		d, closeDest, err := bf.locationDestination(ctx, cmd, cfg, name)
		if err != nil {
			return err
		}
		defer closeDest()
		dest = &d
	case u.Key != "":
		d, err := urlDestination(ctx, u, bf.locationName)
		if err != nil {
			return err
		}
		dest = &d
	}
	local := bf.out
	if dest != nil {
		if err := velero.CheckBackupFree(ctx, dest.bucket, dest.key); err != nil {
			if errors.Is(err, velero.ErrBackupExists) {
				return badInput("%w: %s in %s (%s): choose another name", velero.ErrBackupExists, name, dest.where, dest.key)
			}
			return &exitError{code: exitUnreachable, err: fmt.Errorf("%s: %w", dest.where, err)}
		}
		dir, err := os.MkdirTemp("", "restoregraph-backup-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		local = filepath.Join(dir, name+".tar.gz")
	}
	res, err := bf.write(ctx, cfg, local, name, spec)
	if err != nil {
		return err
	}
	var log bytes.Buffer
	w := io.MultiWriter(cmd.OutOrStdout(), &log)
	written, beside := bf.out, filepath.Join(filepath.Dir(bf.out), name+".manifest.json.gz")
	if dest != nil {
		written, beside = dest.where+" ("+dest.key+")", path.Join(path.Dir(dest.key), name+"-manifest.json.gz")
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
		rec := velero.BackupRecord{Name: name, Namespace: bf.veleroNS, Location: dest.location, Filter: spec,
			Started: started, Completed: time.Now(), Manifest: res.Manifest, Errors: len(res.Incomplete), Warnings: len(res.Warnings), Log: log.Bytes()}
		if err := dest.put(ctx, local, rec); err != nil {
			return err
		}
	}
	if len(res.Incomplete) > 0 {
		return &exitError{code: exitIncomplete, err: fmt.Errorf("the backup is incomplete: %d list(s) failed", len(res.Incomplete))}
	}
	return nil
}
