// Command restoregraph restores a Kubernetes backup as a dependency graph.
//
//	restoregraph plan     --backup FILE|URL | --from-backup NAME [-o text|json|dot]
//	restoregraph restore  --backup FILE|URL | --from-backup NAME | --plan FILE | --from-velero-restore FILE
//	restoregraph verify   --backup FILE|URL | --from-backup NAME
//	restoregraph backup   -o FILE|URL | --storage-location LOCATION --name NAME
//	restoregraph manifest --backup FILE|URL [-o FILE]
//	restoregraph controller --plugins DIR   (carries out Velero's Restore objects)
//
// The target cluster comes from the kubeconfig (--kubeconfig, --context, as kubectl
// reads them), or is the embedded in-process API server with --embedded. Every command
// and flag is in docs/reference/cli.md, generated from these definitions.
//
// The command only wires: flags become the options of the library's packages (restore,
// backup, velero, velero/controller), and their results are printed by the library's
// writers.
//
// Exit codes: 0 when everything was restored, 1 when something failed or was skipped,
// 2 for bad usage or bad input, 3 when the cluster or the backup's store could not be
// reached or stopped answering (trying again may succeed).
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// newRoot returns the command, and what ends the profiles its run started.
func newRoot() (*cobra.Command, func() error) {
	root := &cobra.Command{
		Use:   "restoregraph",
		Short: "Restore a Kubernetes backup as a dependency graph",
		Long: `restoregraph restores a Velero-format Kubernetes backup into a cluster in dependency
order: owners before dependents, CRDs before their resources, namespaces before what
they hold, each object as soon as what it depends on is restored and ready, at an API
version the target serves, with owner UIDs remapped.`,
		Version:       version(),
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
	root.AddCommand(newPlanCmd(), newRestoreCmd(), newBackupCmd(), newVerifyCmd(), newManifestCmd(), newControllerCmd())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return badInput("%v\n%s", err, c.UsageString()) })
	return root, func() error { return stopProfiles() }
}

// releaseVersion is set by the release build (-ldflags -X main.releaseVersion=V).
var releaseVersion string

// version is the command's version: the release's, or as the go command recorded it
// in the binary (the module's version for go install ...@VERSION, else "(devel)" or
// the commit's pseudo-version).
func version() string {
	if releaseVersion != "" {
		return releaseVersion
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		return info.Main.Version
	}
	return "(devel)"
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
