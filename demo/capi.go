package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/baseline"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/restore"
)

// capiDemo is the Cluster API demo: what its flags say.
type capiDemo struct {
	clusters, workers   int
	out                 string
	latency             time.Duration
	kubeconfig, kubectx string
}

// flags are the demo's flags, in fs.
func (d *capiDemo) flags(fs *flag.FlagSet) {
	fs.IntVar(&d.clusters, "clusters", 10, "workload clusters in the backup")
	fs.IntVar(&d.workers, "workers", 16, "objects restored at once")
	fs.StringVar(&d.out, "out", "out/demo", "directory for the backup, the plan and the pictures")
	fs.DurationVar(&d.latency, "latency", 5*time.Millisecond, "mean latency of the embedded API server's requests")
	fs.StringVar(&d.kubeconfig, "kubeconfig", "", "restore into this kubeconfig's cluster instead of the embedded API server")
	fs.StringVar(&d.kubectx, "context", "", "the kubeconfig's context")
}

func (d *capiDemo) embedded() bool { return d.kubeconfig == "" && d.kubectx == "" }

func (d *capiDemo) server() (*memcluster.Server, error) {
	return memcluster.StartServer(memcluster.Options{
		GC: true, GCDelay: 200 * time.Millisecond, EstablishDelay: 100 * time.Millisecond,
		Latency: memcluster.UniformLatency(1, d.latency/2, d.latency*3/2),
	})
}

func (d *capiDemo) run(out io.Writer) error {
	if d.clusters < 1 || d.workers < 1 {
		return errUsage("--clusters and --workers must be at least 1")
	}
	if err := os.MkdirAll(d.out, 0o755); err != nil {
		return errUsage("--out: " + err.Error())
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
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
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = d.kubeconfig
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: d.kubectx}).ClientConfig()
		if err != nil {
			return errUsage("--kubeconfig: " + err.Error())
		}
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
		return errors.New("the restore did not complete")
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
	svgPath := filepath.Join(d.out, "plan.svg")
	if err := writeFile(svgPath, func(w io.Writer) error { return renderSVG(context.Background(), dot, w) }); err != nil {
		return err
	}
	fmt.Fprintf(out, "Plan: %d objects, critical path of %d, %d warnings; wrote %s and %s\n", p.Len(), len(p.CriticalPath), len(p.Warnings), dotPath, svgPath)
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
