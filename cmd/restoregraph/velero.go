package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/progress"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero"
	"github.com/restoregraph/restoregraph/velero/pluginhost"
)

// veleroFlags name a backup as Velero names it: by its Backup object, or as the newest
// of a Schedule's, read where the Backup's BackupStorageLocation keeps it through the
// location's own object-store plugin, as Velero reads it. Any store Velero supports is
// then reached with no provider code here.
type veleroFlags struct {
	backup, schedule, namespace, sourceKubeconfig string
	allowPartiallyFailed                          bool
}

func (v *veleroFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&v.backup, "from-backup", "", "the backup by its name in Velero: its Backup and BackupStorageLocation are read from the cluster where Velero runs "+
		"(--source-kubeconfig, default the target) and the tarball through the location's object-store plugin, one of the executables of --plugins or --plugin, as Velero reads it")
	fs.StringVar(&v.schedule, "from-schedule", "", "the newest Completed backup of this Velero Schedule, read as --from-backup reads one")
	fs.BoolVar(&v.allowPartiallyFailed, "allow-partially-failed", false, "with --from-schedule: the newest Completed or PartiallyFailed backup, as Velero's")
	fs.StringVar(&v.namespace, "velero-namespace", "velero", "the namespace Velero runs in, where its Backups, locations and their Secrets are")
	fs.StringVar(&v.sourceKubeconfig, "source-kubeconfig", "", "the kubeconfig of the cluster where Velero runs, for --from-backup and --from-schedule (default the target's)")
}

// check says whether the backup is named through Velero, and that it is named once, with
// what reading it that way needs.
func (v *veleroFlags) check(backup, s3Endpoint string, plugins, embedded bool) (byName bool, err error) {
	named := 0
	for _, s := range []string{backup, v.backup, v.schedule} {
		if s != "" {
			named++
		}
	}
	switch {
	case v.allowPartiallyFailed && v.schedule == "":
		return false, badInput("--allow-partially-failed goes with --from-schedule (or a Restore's spec.scheduleName)")
	case named == 0:
		return false, badInput("name the backup: --backup FILE|URL, --from-backup NAME or --from-schedule NAME")
	case named > 1:
		return false, badInput("--backup, --from-backup and --from-schedule each name a backup: give one")
	case backup != "":
		if v.sourceKubeconfig != "" {
			return false, badInput("--source-kubeconfig is where Velero runs, for --from-backup and --from-schedule; --backup names the backup itself")
		}
		return false, nil
	case s3Endpoint != "":
		return false, badInput("--s3-endpoint is for an s3:// --backup: --from-backup reaches the store as its location says")
	case !plugins:
		return false, badInput("--from-backup and --from-schedule read the backup through its location's object-store plugin: " +
			"give the directory of Velero's plugins with --plugins (as Velero's /plugins), or the plugin with --plugin")
	case embedded && v.sourceKubeconfig == "":
		return false, badInput("--from-backup and --from-schedule with --embedded: give --source-kubeconfig, the cluster where Velero runs")
	}
	return true, nil
}

// veleroSource is a backup read through Velero: where it is, and what recording a
// restore of it in Velero needs.
type veleroSource struct {
	velero  velero.Client
	store   *velero.Store // the backup's location
	backup  string        // its name
	volumes []restore.Volume
}

// client reaches Velero's objects in the source cluster: --source-kubeconfig's, else
// the target's (target, its configuration).
func (v *veleroFlags) client(target *rest.Config) (velero.Client, error) {
	cfg := target
	if v.sourceKubeconfig != "" {
		var err error
		if cfg, err = clientcmd.BuildConfigFromFlags("", v.sourceKubeconfig); err != nil {
			return velero.Client{}, badInput("--source-kubeconfig: %w", err)
		}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return velero.Client{}, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return velero.Client{}, err
	}
	return velero.Client{Dynamic: dyn, Secrets: cs.CoreV1(), Namespace: v.namespace}, nil
}

// read finds the backup through Velero's objects in the source cluster (target is the
// target's configuration, the default) and opens it through its location's object store,
// with the plugins of host. It returns the backup, where it is, and what closes both.
func (v *veleroFlags) read(ctx context.Context, target *rest.Config, host *pluginhost.Host, commands [][]string, warn io.Writer) (
	b *archive.Backup, src *veleroSource, closeAll func(), err error) {
	client, err := v.client(target)
	if err != nil {
		return nil, nil, nil, err
	}
	var vb *velero.Backup
	if v.schedule != "" {
		vb, err = client.LatestOfSchedule(ctx, v.schedule, v.allowPartiallyFailed)
	} else {
		vb, err = client.Backup(ctx, v.backup)
	}
	if err != nil {
		return nil, nil, nil, veleroError(err)
	}
	store, err := client.OpenLocation(ctx, host, vb.Location, commands...)
	if err != nil {
		return nil, nil, nil, veleroError(err)
	}
	label := fmt.Sprintf("backup %s/%s", v.namespace, vb.Name)
	if vb.Phase != "Completed" {
		fmt.Fprintf(warn, "restoregraph: warning: %s is %s: what it failed to back up is not in it\n", label, vb.Phase)
	}
	meter := &progress.Meter{Source: store}
	stop := meter.Show(warn, label)
	b, err = archive.Open(ctx, meter, vb.Key(), archive.Options{})
	stop()
	if err != nil {
		store.Close()
		return nil, nil, nil, sourceError(fmt.Sprintf("%s/%s in location %s", v.namespace, vb.Name, vb.Location.Name), err)
	}
	vols, err := velero.ReadVolumes(ctx, store, vb.Key())
	if err != nil {
		b.Close()
		store.Close()
		return nil, nil, nil, badInput("%w", err)
	}
	return b, &veleroSource{velero: client, store: store, backup: vb.Name, volumes: vols}, func() {
		progress.ReportRead(warn, label, b)
		b.Close()
		store.Close()
	}, nil
}

// veleroError gives what Velero's objects say of a backup its exit code: a backup, a
// location, a Secret or a plugin that is missing or not ready is bad input; the cluster
// not answering is not.
func veleroError(err error) error {
	for _, kind := range []error{velero.ErrBackupNotFound, velero.ErrBackupNotRestorable, velero.ErrNoBackupOfSchedule,
		velero.ErrLocationNotFound, velero.ErrLocationUnavailable, velero.ErrLocationInvalid,
		velero.ErrSecretKey, pluginhost.ErrNoObjectStore, velero.ErrLocationReadOnly, velero.ErrRestoreExists, velero.ErrBackupExists} {
		if errors.Is(err, kind) {
			return badInput("%w", err)
		}
	}
	return err
}
