package controller_test

import (
	"context"
	"log"
	"log/slog"
	"os"
	"os/signal"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero"
	"github.com/restoregraph/restoregraph/velero/controller"
	"github.com/restoregraph/restoregraph/velero/controller/metrics"
	"github.com/restoregraph/restoregraph/velero/pluginhost"
)

// The controller in an embedder's program: the clients of the cluster it runs in,
// Velero's plugins, Prometheus's metrics on :8090, until the process is interrupted.
func Example() {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		log.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	cs := kubernetes.NewForConfigOrDie(cfg)
	target, err := restore.NewTarget(cfg)
	if err != nil {
		log.Fatal(err)
	}
	host := &pluginhost.Host{}
	defer host.Close()

	var c *controller.Controller
	m := metrics.NewPrometheus(func() int { return c.Electing() })
	c, err = controller.New(controller.Config{
		Velero:         velero.Client{Dynamic: dyn, Secrets: cs.CoreV1(), Namespace: "velero"},
		Kubernetes:     cs,
		Target:         target,
		Plugins:        host,
		PluginCommands: [][]string{{"/plugins/velero-plugin-for-aws"}},
		Logger:         slog.Default(),
		Metrics:        m,
	})
	if err != nil {
		log.Fatal(err)
	}
	stop, err := metrics.Serve(":8090", m.Registry, c.Ready, slog.Default())
	if err != nil {
		log.Fatal(err)
	}
	defer stop()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if err := c.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
