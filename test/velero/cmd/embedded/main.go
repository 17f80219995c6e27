// Command embedded carries out a Velero Restore, read with Velero's own types, with
// restoregraph's library, built inside Velero's own module graph (this module pins
// Velero v1.18.3 and its requirements) and linked beside Velero's restore controller
// and restorer: the program a backup tool embedding restoregraph would build. It
// restores into the embedded API server and prints the report.
//
//	embedded -backup shop-and-fleet.tar.gz -restore restore.yaml
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	velerocontroller "github.com/vmware-tanzu/velero/pkg/controller"
	velerorestore "github.com/vmware-tanzu/velero/pkg/restore"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/restore"
)

// Velero's restore controller and restorer, linked into the same program as the
// library: the two build together, on the same Kubernetes libraries.
var (
	_ = velerocontroller.NewRestoreReconciler
	_ = velerorestore.NewKubernetesRestorer
)

func main() {
	backup := flag.String("backup", "", "a backup tarball as Velero writes it")
	restoreFile := flag.String("restore", "", "a Velero Restore (YAML or JSON)")
	flag.Parse()
	if err := run(*backup, *restoreFile); err != nil {
		fmt.Fprintln(os.Stderr, "embedded:", err)
		os.Exit(1)
	}
}

func run(backupFile, restoreFile string) error {
	data, err := os.ReadFile(restoreFile)
	if err != nil {
		return err
	}
	var r velerov1.Restore
	if err := yaml.UnmarshalStrict(data, &r); err != nil {
		return fmt.Errorf("%s: %w", restoreFile, err)
	}
	cfg, stop, err := memcluster.Start(memcluster.Options{GC: true})
	if err != nil {
		return err
	}
	defer stop()
	target, err := restore.NewTarget(cfg)
	if err != nil {
		return err
	}
	rep, err := restoreInto(context.Background(), backupFile, &r, target)
	if rep != nil {
		if werr := rep.WriteText(os.Stdout); werr != nil {
			return werr
		}
	}
	return err
}

// restoreInto carries out r, a Restore of the backup in backupFile, into target.
func restoreInto(ctx context.Context, backupFile string, r *velerov1.Restore, target restore.Target) (*restore.Report, error) {
	f, err := os.Open(backupFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := archive.Read(ctx, f, archive.Options{})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	plan, err := restore.NewPlan(ctx, b, target, restore.PlanOptions{BackupName: r.Spec.BackupName, Selection: selection(r.Spec)})
	if err != nil {
		return nil, err
	}
	return restore.Apply(ctx, plan, target, restore.RunOptions{})
}

// selection is what spec selects, in the library's terms: the fields of Velero's
// Restore spec this program takes.
func selection(spec velerov1.RestoreSpec) restore.Selection {
	return restore.Selection{
		Filter: filter.Spec{
			IncludeNamespaces: spec.IncludedNamespaces, ExcludeNamespaces: spec.ExcludedNamespaces,
			IncludeResources: spec.IncludedResources, ExcludeResources: spec.ExcludedResources,
			IncludeClusterResources: spec.IncludeClusterResources,
		},
		NamespaceMappings: spec.NamespaceMapping,
		RestorePVs:        spec.RestorePVs,
		PreserveNodePorts: ptr.Deref(spec.PreserveNodePorts, false),
	}
}
