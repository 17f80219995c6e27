package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/baseline"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/restore"
)

func newDemoCmd() *cobra.Command {
	demo := &cobra.Command{Use: "demo", Short: "Demonstrations of restoregraph"}
	demo.AddCommand(newCAPIDemoCmd())
	return demo
}

type capiDemo struct {
	clusters, workers int
	out               string
	latency           time.Duration
	flags             *genericclioptions.ConfigFlags
}

func newCAPIDemoCmd() *cobra.Command {
	d := &capiDemo{flags: genericclioptions.NewConfigFlags(true)}
	cmd := &cobra.Command{
		Use:   "capi",
		Short: "Restore a Cluster API management cluster's backup in dependency order",
		Long: `Writes a Velero-format backup of a fleet of Cluster API workload clusters, with the
ownerReferences and labels Cluster API sets and CRDs served at two versions, then
restores it into the embedded API server (garbage collection on, per-request latency
as a real server has), or into the cluster of --kubeconfig, and compares the restore
with a model of Velero's (one object at a time in its order, ownerReferences removed)
and with a naive copy (ownerReferences kept verbatim).

Into --out it writes the backup, the plan (JSON, DOT, and SVG where Graphviz's dot is
installed), the report, and a timeline of the restore as an SVG picture.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return d.run(cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.IntVar(&d.clusters, "clusters", 10, "workload clusters in the backup")
	f.IntVar(&d.workers, "workers", 16, "objects restored at once")
	f.StringVar(&d.out, "out", "out/demo", "directory for the backup, the plan and the pictures")
	f.DurationVar(&d.latency, "latency", 5*time.Millisecond, "mean latency of the embedded API server's requests")
	d.flags.AddFlags(f)
	return cmd
}

func (d *capiDemo) embedded() bool {
	return (d.flags.KubeConfig == nil || *d.flags.KubeConfig == "") && (d.flags.Context == nil || *d.flags.Context == "")
}

func (d *capiDemo) server() (*memcluster.Server, error) {
	return memcluster.StartServer(memcluster.Options{
		GC: true, GCDelay: 200 * time.Millisecond, EstablishDelay: 100 * time.Millisecond,
		Latency: memcluster.UniformLatency(1, d.latency/2, d.latency*3/2),
	})
}

func (d *capiDemo) run(out io.Writer) error {
	if d.clusters < 1 || d.workers < 1 {
		return badInput("--clusters and --workers must be at least 1")
	}
	if err := os.MkdirAll(d.out, 0o755); err != nil {
		return badInput("--out: %w", err)
	}
	ctx, cancel := signalContext()
	defer cancel()

	backupPath := filepath.Join(d.out, "backup.tar.gz")
	if err := writeFile(backupPath, func(w io.Writer) error {
		return workload.CAPI(workload.CAPIOptions{Clusters: d.clusters, Seed: 1}).Write(w)
	}); err != nil {
		return err
	}
	b, err := archive.ReadFile(ctx, backupPath, archive.Options{})
	if err != nil {
		return err
	}
	defer b.Close() // its spill file, if it needed one
	fmt.Fprintf(out, "Backup: %s, %d objects of %d resource types, %d Cluster API workload clusters\n",
		backupPath, b.Manifest().Len(), len(b.Resources()), d.clusters)

	var srv *memcluster.Server
	var cfg *rest.Config
	if d.embedded() {
		if srv, err = d.server(); err != nil {
			return err
		}
		defer srv.Close()
		cfg = srv.InProcessConfig()
		fmt.Fprintf(out, "Target: the embedded API server (garbage collection on, %s mean latency per request)\n", d.latency)
	} else {
		var stop func()
		if cfg, stop, err = (&target{flags: d.flags}).config(); err != nil {
			return err
		}
		defer stop()
		fmt.Fprintf(out, "Target: %s\n", cfg.Host)
	}

	tgt, err := restore.NewTarget(cfg)
	if err != nil {
		return err
	}
	p, err := restore.NewPlan(ctx, b, tgt, restore.PlanOptions{})
	if err != nil {
		return err
	}
	if err := d.writePlan(out, p); err != nil {
		return err
	}

	rep, err := restore.Apply(ctx, p, tgt, restore.RunOptions{Workers: d.workers})
	if err != nil {
		return err
	}
	took := rep.Finished.Sub(rep.Started)
	if err := writeFile(filepath.Join(d.out, "report.json"), rep.WriteJSON); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(d.out, "timeline.svg"), func(w io.Writer) error { return timelineSVG(w, p, rep) }); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nrestoregraph: %d objects in %s with %d workers: %d restored, %d failed, %d skipped\n",
		rep.Len(), took.Round(time.Millisecond), d.workers, rep.Count(restore.Restored), rep.Count(restore.Failed), rep.Count(restore.Skipped))
	fmt.Fprintf(out, "  wrote %s and %s\n", filepath.Join(d.out, "report.json"), filepath.Join(d.out, "timeline.svg"))

	if srv != nil {
		time.Sleep(3 * 200 * time.Millisecond) // give the garbage collector time to act
		fmt.Fprintf(out, "  objects deleted by the garbage collector afterwards: %d\n", srv.Collected())
		kept, links, err := baseline.Ownership(ctx, tgt, b)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  ownership links kept, pointing at the new owners: %d of %d\n", kept, links)
		if err := d.compare(ctx, out, b, took); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(out, "  (the comparison with Velero's order runs on the embedded target only: it needs a fresh cluster)")
	}
	if !rep.OK() {
		return &exitError{code: exitIncomplete, err: fmt.Errorf("the restore did not complete")}
	}
	return nil
}

func (d *capiDemo) writePlan(out io.Writer, p *restore.Plan) error {
	dotPath := filepath.Join(d.out, "plan.dot")
	dot, err := p.DOT()
	if err != nil {
		return err
	}
	if err := os.WriteFile(dotPath, dot, 0o644); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(d.out, "plan.json"), p.WriteJSON); err != nil {
		return err
	}
	fmt.Fprintf(out, "Plan: %d objects, critical path of %d, %d warnings; wrote %s", p.Len(), len(p.CriticalPath), len(p.Warnings), dotPath)
	if dotBin, err := exec.LookPath("dot"); err == nil {
		svg := filepath.Join(d.out, "plan.svg")
		if err := exec.Command(dotBin, "-Tsvg", dotPath, "-o", svg).Run(); err == nil {
			fmt.Fprintf(out, " and %s", svg)
		}
	} else {
		fmt.Fprint(out, " (install Graphviz for plan.svg)")
	}
	fmt.Fprintln(out)
	return nil
}

// compare restores the same backup into fresh embedded servers: as a model of Velero's
// restore (one object at a time in its order, ownerReferences removed), and as a naive
// copy that keeps ownerReferences verbatim.
func (d *capiDemo) compare(ctx context.Context, out io.Writer, b *archive.Backup, took time.Duration) error {
	velero, err := d.server()
	if err != nil {
		return err
	}
	defer velero.Close()
	vtgt, err := restore.NewTarget(velero.InProcessConfig())
	if err != nil {
		return err
	}
	vpo, vro := baseline.Velero(restore.PlanOptions{}, restore.RunOptions{})
	vrep, err := restore.Run(ctx, b, vtgt, vpo, vro)
	if err != nil {
		return err
	}
	vtook := vrep.Finished.Sub(vrep.Started)
	kept, links, err := baseline.Ownership(ctx, vtgt, b)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "A model of Velero's restore (its order, one object at a time, ownerReferences removed as Velero removes them):\n"+
		"  %d objects in %s: restoregraph is %.1fx faster; ownership links kept: %d of %d\n",
		vrep.Len(), vtook.Round(time.Millisecond), vtook.Seconds()/took.Seconds(), kept, links)

	naive, err := d.server()
	if err != nil {
		return err
	}
	defer naive.Close()
	ntgt, err := restore.NewTarget(naive.InProcessConfig())
	if err != nil {
		return err
	}
	if _, err := restore.Run(ctx, b, ntgt, restore.PlanOptions{Extensions: baseline.CopyOwnerReferences(restore.Extensions{})},
		restore.RunOptions{Workers: d.workers}); err != nil {
		return err
	}
	time.Sleep(3 * 200 * time.Millisecond)
	fmt.Fprintf(out, "A naive copy (ownerReferences copied verbatim, as kubectl create of saved YAML): the garbage collector deleted %d of %d restored objects\n",
		naive.Collected(), b.Manifest().Len())
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
