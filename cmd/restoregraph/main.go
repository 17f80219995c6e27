// Command restoregraph restores a Kubernetes backup as a dependency graph.
//
//	restoregraph plan     --backup FILE [-o text|json|dot] [--embedded]
//	restoregraph restore  --backup FILE [--workers N] [--item-timeout D] [--journal FILE]
//	                      [--version-priorities FILE] [--strict-versions]
//	                      [--existing adopt|update|fail | --existing-resource-policy none|update]
//	                      [-o text|json] [--embedded]
//	restoregraph restore  --plan FILE [--replan]   (a plan saved by plan -o json, restored as saved)
//	restoregraph restore  --from-velero-restore FILE --plugins DIR   (a Velero Restore object, its spec in full)
//	restoregraph manifest --backup FILE [-o FILE]
//	restoregraph demo capi [--clusters N] [--workers N] [--kubeconfig ...] [--out DIR]
//	restoregraph controller --plugins DIR   (carries out Velero's Restore objects, in place of Velero's restore controller)
//
// The target cluster comes from the kubeconfig (--kubeconfig, --context, as kubectl
// reads them), or is the embedded in-process API server with --embedded.
//
// --backup is a tarball, or a URL of one kept in object storage as Velero keeps it
// (s3://BUCKET/PREFIX/NAME, file://). plan, restore and verify also take a backup by
// its name in Velero (--from-backup NAME, --from-schedule NAME): its Backup and
// BackupStorageLocation are read from the cluster where Velero runs, and the tarball
// through the location's object-store plugin (--plugins DIR), as Velero reads it; a
// restore of it is recorded in Velero as Velero records its own. backup writes into one
// of Velero's locations the same way (--storage-location LOCATION --name NAME).
//
// Exit codes: 0 when everything was restored, 1 when something failed or was skipped,
// 2 for bad usage or bad input, 3 when the cluster or the backup's store could not be
// reached or stopped answering (trying again may succeed).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"

	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/restore"
)

// Exit codes.
const (
	exitOK         = 0
	exitIncomplete = 1
	exitBadInput   = 2
	// exitUnreachable: the cluster or the backup's store could not be reached or read
	// (the network, the server's or the store's service), where trying again may succeed.
	exitUnreachable = 3
)

// exitError carries the exit code of a failed command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func badInput(format string, args ...any) error {
	return &exitError{code: exitBadInput, err: fmt.Errorf(format, args...)}
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	root, stopProfiles := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	if perr := stopProfiles(); perr != nil && err == nil {
		err = perr
	}
	if err == nil {
		return exitOK
	}
	code := exitBadInput // cobra's usage errors: unknown flags, missing arguments
	var ee *exitError
	if errors.As(err, &ee) {
		code, err = ee.code, ee.err
	}
	if code == exitBadInput && unreachable(err) {
		code = exitUnreachable
	}
	if code != exitIncomplete || err.Error() != "" {
		fmt.Fprintln(os.Stderr, "restoregraph:", err)
	}
	return code
}

// unreachable says whether err is the cluster or a store out of reach, or not
// answering, rather than anything wrong with what was asked: a connection refused,
// reset or timed out, a server unavailable or throttling. A script retries those, not
// bad input.
func unreachable(err error) bool {
	var oe *net.OpError // dial, read, write: refused, reset, timed out
	var ue *url.Error   // a request that got no response: TLS handshake, EOF, timeout
	var de *net.DNSError
	if errors.As(err, &oe) || errors.As(err, &ue) || errors.As(err, &de) {
		return true
	}
	return apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err)
}

// target is where a command restores to.
type target struct {
	flags    *genericclioptions.ConfigFlags
	embedded bool
	dataDir  string // --embedded-data-dir
	qps      float32
	burst    int
	limiter  *meteredLimiter    // set by config for a kubeconfig's cluster
	server   *memcluster.Server // set by config for --embedded
	reach    reachability
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
		s, err := memcluster.StartServer(memcluster.Options{GC: true, ServiceCIDR: "10.96.0.0/12", DataDir: t.dataDir})
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
	t.limiter = newMeteredLimiter(t.qps, t.burst)
	cfg.RateLimiter = t.limiter
	cfg.Wrap(t.reach.wrap)
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
	if t.server != nil {
		// Handed each object as the restore holds it, decoded: nothing is encoded for the
		// server to decode again, nor its answer decoded.
		tgt.Creator = t.server
	}
	return tgt, cfg, stop, nil
}

// newRoot returns the command, and what ends the profiles its run started.
func newRoot() (*cobra.Command, func() error) {
	root := &cobra.Command{
		Use:   "restoregraph",
		Short: "Restore a Kubernetes backup as a dependency graph",
		Long: `restoregraph restores a Velero-format Kubernetes backup into a cluster in dependency
order: owners before dependents, CRDs before their resources, namespaces before what
they hold, each object as soon as what it depends on is restored and ready, at an API
version the target serves, with owner UIDs remapped.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().CountP("verbose", "v", "log the run's structured records to standard error: -v its start and end and every failure, -vv every object")
	root.PersistentFlags().String("log-format", "text", "the log's format: text or json (json logs the run even without -v)")
	addProfileFlags(root)
	stopProfiles := func() error { return nil }
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if f, _ := cmd.Flags().GetString("log-format"); f != "text" && f != "json" {
			return badInput("--log-format must be text or json, not %q", f)
		}
		if err := limitMemory(cmd.Context(), logger(cmd), cmd.Name() == "controller"); err != nil {
			return err
		}
		stop, err := startProfiles(cmd)
		if err == nil {
			stopProfiles = stop
		}
		return err
	}
	root.AddCommand(newPlanCmd(), newRestoreCmd(), newBackupCmd(), newVerifyCmd(), newManifestCmd(), newDemoCmd(), newControllerCmd())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return badInput("%v\n%s", err, c.UsageString()) })
	return root, func() error { return stopProfiles() }
}

// logger is the run's logger as the root's flags ask: none without -v or --log-format
// json, records of the run and its failures with -v (or json), every object's with -vv.
func logger(cmd *cobra.Command) *slog.Logger {
	verbosity, _ := cmd.Flags().GetCount("verbose")
	format, _ := cmd.Flags().GetString("log-format")
	if verbosity == 0 && format != "json" {
		return nil
	}
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if verbosity >= 2 {
		opts.Level = slog.LevelDebug
	}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), opts))
	}
	return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), opts))
}
