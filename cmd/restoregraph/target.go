package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"

	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/progress"
	"github.com/restoregraph/restoregraph/restore"
)

// target is where a command restores to.
type target struct {
	flags    *genericclioptions.ConfigFlags
	embedded bool
	dataDir  string // --embedded-data-dir
	qps      float32
	burst    int
	limiter  *progress.Limiter  // set by config for a kubeconfig's cluster
	server   *memcluster.Server // set by config for --embedded
	reach    progress.Reachability
	// limitSet: --client-qps or --client-burst given. Otherwise a server with API
	// Priority and Fairness is sent requests unthrottled.
	limitSet func() bool
	stderr   func() io.Writer
}

func (t *target) addFlags(cmd *cobra.Command) {
	t.flags.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&t.embedded, "embedded", false, "use the embedded in-process API server instead of the kubeconfig's cluster")
	cmd.Flags().StringVar(&t.dataDir, "embedded-data-dir", os.TempDir(), "where the embedded server keeps its objects' JSON, in a file it removes from the directory at once (the kernel's page cache holds it, not the process's heap; as it is on a disk, compressed on tmpfs); empty keeps it in memory")
	cmd.Flags().Float32Var(&t.qps, "client-qps", 200, "requests per second the client sends the API server at most; by default none when the server has API Priority and Fairness (it answers with its flow schema), which then paces its clients itself")
	cmd.Flags().IntVar(&t.burst, "client-burst", 400, "requests the client may send at once above --client-qps")
	t.limitSet = func() bool { return cmd.Flags().Changed("client-qps") || cmd.Flags().Changed("client-burst") }
	t.stderr = cmd.ErrOrStderr
}

// unthrottled is the limit of a client left to the server's API Priority and Fairness:
// none that a restore reaches.
const unthrottled = 1e9

// pacedByServer reports whether the server of cfg has API Priority and Fairness: its
// answer to /livez/ping names the flow schema that classified it. Any failure to ask is
// a no: the client keeps its own limit.
func pacedByServer(cfg *rest.Config) bool {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return false
	}
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.JoinPath("livez", "ping").String(), nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID) != ""
}

// config returns the target's client configuration and a function that releases it.
func (t *target) config() (*rest.Config, func(), error) {
	if t.embedded {
		// A /12, as large clusters' Service ranges: a backup of a large cluster holds more
		// Services than the /24 a kube-apiserver has by default.
		if t.dataDir != "" {
			if fi, err := os.Stat(t.dataDir); err != nil {
				return nil, nil, badInput("--embedded-data-dir: %w", err)
			} else if !fi.IsDir() {
				return nil, nil, badInput("--embedded-data-dir: %s is not a directory", t.dataDir)
			}
		}
		s, err := memcluster.StartServer(memcluster.Options{GC: true, BindVolumes: true, ServiceCIDR: "10.96.0.0/12", DataDir: t.dataDir})
		if err != nil {
			return nil, nil, err
		}
		// Served in this process, without a connection.
		t.server = s
		return s.InProcessConfig(), func() {
			writeHeapProfile() // its error is the run's end's to report
			if err := s.DataFileError(); err != nil {
				fmt.Fprintf(t.stderr(), "restoregraph: warning: the embedded server kept objects in memory from the first its data file refused: %v\n", err)
			}
			s.Close()
		}, nil
	}
	cfg, err := t.flags.ToRESTConfig()
	if err != nil {
		return nil, nil, badInput("kubeconfig: %w (use --embedded for the in-process API server)", err)
	}
	// With no kubeconfig at all and not in a Pod, client-go falls back to
	// http://localhost:8080, which is not a cluster anybody meant: say what is missing
	// instead of failing to reach it.
	if raw, err := t.flags.ToRawKubeConfigLoader().RawConfig(); err == nil && len(raw.Clusters) == 0 &&
		(t.flags.APIServer == nil || *t.flags.APIServer == "") && os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		return nil, nil, badInput("no kubeconfig: set KUBECONFIG, --kubeconfig or --server, or use --embedded for the in-process API server")
	}
	if t.qps <= 0 || t.burst <= 0 {
		return nil, nil, badInput("--client-qps and --client-burst must be positive")
	}
	if (t.limitSet == nil || !t.limitSet()) && pacedByServer(cfg) {
		t.qps, t.burst = unthrottled, unthrottled
	}
	cfg.QPS, cfg.Burst = t.qps, t.burst
	t.limiter = progress.NewLimiter(t.qps, t.burst)
	cfg.RateLimiter = t.limiter
	cfg.Wrap(t.reach.Wrap)
	return cfg, func() {}, nil
}

// restoreTarget returns the clients of the target, its configuration, and a function
// that releases it.
func (t *target) restoreTarget() (restore.Target, *rest.Config, func(), error) {
	cfg, stop, err := t.config()
	if err != nil {
		return restore.Target{}, nil, nil, err
	}
	tgt, err := restore.NewTarget(cfg)
	if err != nil {
		stop()
		return restore.Target{}, nil, nil, err
	}
	return tgt, cfg, stop, nil
}
