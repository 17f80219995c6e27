package main

import (
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero/controller"
	"github.com/restoregraph/restoregraph/velero/controller/metrics"
)

// newControllerCmd is restoregraph as Velero's restore controller: the flags of a
// controller.Config, and the endpoints that serve its metrics.
func newControllerCmd() *cobra.Command {
	var (
		cfg            controller.Config
		pluginDir      string
		pluginPaths    []string
		metricsAddress string
		asRequester    bool
	)
	t := &target{flags: genericclioptions.NewConfigFlags(true)}
	cmd := &cobra.Command{
		Use:   "controller --plugins DIR",
		Short: "Carry out Velero's Restore objects as graphs, in place of Velero's restore controller",
		Long: `controller watches the Restore objects of Velero's namespace and carries out each new one,
as Velero's restore controller would: it validates it (a field it does not support fails
validation, named), reads the backup through its location's object-store plugin, restores
it as a graph into the cluster it runs in, and moves the Restore through Velero's phases
(InProgress, then Completed, PartiallyFailed, Failed or FailedValidation) with its
progress, writing its results and log where Velero writes them, so that velero restore
describe --details and velero restore logs show it. Run Velero's server with
--disable-controllers restore,restore-operations,restore-finalizer. Restores that touch
the same objects wait for each other through Leases (--admission-namespace), across
processes, in the order they were created. Several processes may run (the replicas of a
Deployment): each Restore is carried out by the one holding its Lease, and taken over by
another when that one dies, following the journal the first kept in the cluster. A
Restore deleted (velero restore delete) has its files removed from the location first.
Beyond what Velero checks, a Restore that would reach where its creator's rights may not
fails validation, the reason on it: a namespace mapping onto a protected namespace
(--protected-namespaces), or a backup holding such a namespace's objects, resource
modifiers that change RBAC (--allow-rbac-modifiers), a backup in a location not listed
(--locations). With --as-requester a Restore is carried out with the rights of the user
who created it, and refused, naming the rights they lack, before anything is written.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case pluginDir == "":
				return badInput("--plugins: the directory of Velero's plugins, among them the object store of the backups' locations")
			case cfg.Restores < 1:
				return badInput("--restores must be at least 1")
			case cfg.LeaseDuration < 3*time.Second:
				return badInput("--lease-duration must be at least 3s: the Lease is renewed within two thirds of it")
			}
			ctx, cancel := signalContext()
			defer cancel()
			tgt, rc, stop, err := t.restoreTarget()
			if err != nil {
				return err
			}
			defer stop()
			dyn, err := dynamic.NewForConfig(rc)
			if err != nil {
				return err
			}
			cs, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			rf := restoreFlags{pluginDir: pluginDir, pluginPaths: pluginPaths}
			host, commands, stopHost, err := rf.pluginHost(rc, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer stopHost()
			if host == nil {
				return badInput("--plugins %s holds no executable", pluginDir)
			}
			cfg.Velero.Dynamic, cfg.Velero.Secrets = dyn, cs.CoreV1()
			cfg.Kubernetes, cfg.Target, cfg.Plugins, cfg.PluginCommands = cs, tgt, host, commands
			if asRequester {
				cfg.AsRequester = func(r controller.Requester) (restore.Target, error) {
					as := rest.CopyConfig(rc)
					as.Impersonate = rest.ImpersonationConfig{UserName: r.User, Groups: r.Groups}
					return restore.NewTarget(as)
				}
			}
			cfg.Logger = controllerLogger(cmd)
			var c *controller.Controller
			m := metrics.NewPrometheus(func() int { return c.Electing() })
			cfg.Metrics = m
			if c, err = controller.New(cfg); err != nil {
				return badInput("%w", err)
			}
			stopServing, err := metrics.Serve(metricsAddress, m.Registry, c.Ready, cfg.Logger)
			if err != nil {
				return badInput("--metrics-address: %w", err)
			}
			defer stopServing()
			return c.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Velero.Namespace, "velero-namespace", "velero", "the namespace Velero runs in: its Restores, Backups and locations")
	f.StringVar(&pluginDir, "plugins", "", "the directory of Velero's plugins, as Velero's /plugins: the object stores of the locations, and RestoreItemActions")
	f.StringArrayVar(&pluginPaths, "plugin", nil, "a Velero plugin executable beside --plugins (repeatable): Velero's own command, named velero, serves Velero's built-in actions, "+
		"those that restore volumes among them (/velero in restoregraph's image)")
	f.IntVar(&cfg.Restores, "restores", 4, "Restores carried out at once by this process (those that touch the same objects wait for each other)")
	f.DurationVar(&cfg.Run.ItemTimeout, "item-timeout", 5*time.Minute, "how long one object's own work may take")
	f.StringVar(&cfg.AdmissionNamespace, "admission-namespace", "restoregraph-admission", "the namespace of the admission Leases")
	f.StringVar(&cfg.Identity, "identity", "", "this process's name in the Restores' Leases, their Events and the Restores' taken-by annotation (a Pod's name; default HOSTNAME-PID)")
	f.StringSliceVar(&cfg.Guard.ProtectedNamespaces, "protected-namespaces", controller.DefaultProtectedNamespaces,
		"namespaces no Restore restores into, by a namespace mapping or as its backup holds them (Velero's namespace always; \"\" for none but it)")
	f.BoolVar(&cfg.Guard.RBACModifiers, "allow-rbac-modifiers", false, "let resource modifiers change Roles, ClusterRoles and their bindings")
	f.StringSliceVar(&cfg.Guard.Locations, "locations", nil, "the backup storage locations whose backups may be restored (default: any)")
	f.BoolVar(&asRequester, "as-requester", false, "carry out each Restore with the rights of the user who created it (impersonated), "+
		"as the MutatingAdmissionPolicy restoregraph-requester records them; refuse a Restore they may not carry out")
	f.StringVar(&metricsAddress, "metrics-address", ":8090", "where /metrics (Prometheus), /healthz and /readyz are served")
	f.DurationVar(&cfg.LeaseDuration, "lease-duration", 15*time.Second, "how long a Restore's Lease holds without renewal: how soon another process takes over the Restore of one that died")
	t.addFlags(cmd)
	return cmd
}

// controllerLogger is the command's logger; a controller logs at Info without -v too.
func controllerLogger(cmd *cobra.Command) *slog.Logger {
	if log := logger(cmd); log != nil {
		return log
	}
	return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
}
