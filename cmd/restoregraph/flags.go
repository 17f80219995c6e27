package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/modifier"
	"github.com/restoregraph/restoregraph/plugin"
	"github.com/restoregraph/restoregraph/plugin/builtin"
	"github.com/restoregraph/restoregraph/plugin/velerohost"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/versionselect"
)

// restoreFlags are the flags plan and restore share: what a restore restores and how,
// so that a plan never disagrees with the restore it previews. Names follow Velero's.
type restoreFlags struct {
	filterFlags
	backup                          string
	s3Endpoint                      string
	velero                          veleroFlags
	name                            string // the backup's name, once open has read it
	namespaceMappings               string
	restoreName                     string
	priorities, prioritiesConfigMap string
	modifiers, modifiersConfigMap   string
	strict, preserveNodePorts       bool
	disable                         []string
	existing, existingPolicy        string
	orSelector                      string
	statusInclude, statusExclude    []string
	fromRestoreFile                 string                  // --from-velero-restore
	fromRestore                     *velerohost.RestoreSpec // what it says
	admission, admissionNamespace   string
	pluginDir                       string
	pluginPaths                     []string
	planFile                        string // --plan: a saved plan carries the selection
	replan                          bool
}

// selectionFlag annotates the flags that a saved plan's selection stands for.
const selectionFlag = "restoregraph.dev/selection"

// filterFlags select what a restore restores or a backup backs up.
type filterFlags struct {
	includeNamespaces, excludeNamespaces []string
	includeResources, excludeResources   []string
	includeClusterResources              optionalBool
	selector                             string
}

func (f *filterFlags) add(fs *pflag.FlagSet, verb string) {
	fs.StringSliceVar(&f.includeNamespaces, "include-namespaces", nil, "namespaces to "+verb+" (default every one)")
	fs.StringSliceVar(&f.excludeNamespaces, "exclude-namespaces", nil, "namespaces not to "+verb)
	fs.StringSliceVar(&f.includeResources, "include-resources", nil, "resources to "+verb+", as kubectl names them: plural, singular, short name or kind, optionally .group (default every one)")
	fs.StringSliceVar(&f.excludeResources, "exclude-resources", nil, "resources not to "+verb)
	fs.Var(&f.includeClusterResources, "include-cluster-resources", verb+" cluster-scoped resources: true, false, or unset to decide (all of them when every namespace is taken, else the CRDs of the custom resources taken)")
	fs.Lookup("include-cluster-resources").NoOptDefVal = "true"
	fs.StringVarP(&f.selector, "selector", "l", "", verb+" only objects whose labels match this selector")
}

// spec returns the filter the flags say.
func (f *filterFlags) spec() (filter.Spec, error) {
	spec := filter.Spec{IncludeNamespaces: f.includeNamespaces, ExcludeNamespaces: f.excludeNamespaces,
		IncludeResources: f.includeResources, ExcludeResources: f.excludeResources,
		IncludeClusterResources: f.includeClusterResources.value}
	if f.selector != "" {
		sel, err := labels.Parse(f.selector)
		if err != nil {
			return spec, badInput("--selector %q: %w", f.selector, err)
		}
		spec.Selector = sel
	}
	return spec, nil
}

func (f *restoreFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.backup, "backup", "", backupUsage)
	fs.StringVar(&f.s3Endpoint, "s3-endpoint", "", s3EndpointUsage)
	f.velero.add(fs)
	f.addSelection(fs)
	fs.StringVar(&f.restoreName, "restore-name", "", "the restore's name, in the velero.io/restore-name label of what it makes (default <backup>-<time>)")
	fs.StringVar(&f.admission, "admission", "cluster", "admit the restore against other operations on the cluster: cluster (through Leases in the target, across processes), local (this process) or off")
	fs.StringVar(&f.admissionNamespace, "admission-namespace", "restoregraph-admission", "the namespace of the admission Leases")
	fs.StringVar(&f.pluginDir, "plugins", "", "a directory of Velero plugin executables, as Velero's /plugins: their RestoreItemActions run out of process")
	fs.StringArrayVar(&f.pluginPaths, "plugin", nil, "a Velero plugin executable (repeatable)")
	fs.StringVar(&f.planFile, "plan", "", "a plan saved by plan -o json: restore exactly it (its backup, selection, versions and objects), "+
		"refused with what changed when the backup or the target is no longer what was planned; --backup is then not needed")
	fs.BoolVar(&f.replan, "replan", false, "with --plan: when the plan no longer holds, say what changed and go on with the plan as it is now")
	fs.StringVar(&f.fromRestoreFile, "from-velero-restore", "", "a Velero Restore object (YAML or JSON, as velero restore create -o yaml writes it): its spec in full, "+
		"its backup read as --from-backup or --from-schedule reads one; a field restoregraph does not support is refused, named")
}

// addSelection adds the flags that make the plan's selection, each annotated with
// selectionFlag: a saved plan carries them, so --plan refuses them.
func (f *restoreFlags) addSelection(fs *pflag.FlagSet) {
	sel := pflag.NewFlagSet("selection", pflag.ContinueOnError)
	f.filterFlags.add(sel, "restore")
	sel.StringVar(&f.namespaceMappings, "namespace-mappings", "", "restore namespaces under other names: src1:dst1,src2:dst2")
	sel.StringVar(&f.priorities, "version-priorities", "", "file of resource.group=v1,v2 lines: the user's version priorities")
	sel.StringVar(&f.prioritiesConfigMap, "version-priorities-configmap", "velero/"+versionselect.DefaultConfigMapName,
		"NAMESPACE/NAME of the target's ConfigMap of version priorities, read when it exists and no file is given (\"\" for none)")
	sel.StringVar(&f.modifiers, "resource-modifiers", "", "a file of resource modifiers in Velero's format (version v1, YAML or JSON): rules that change objects as they are restored")
	sel.StringVar(&f.modifiersConfigMap, "resource-modifier-configmap", "", "the ConfigMap of resource modifiers in the target, as Velero keeps it: NAME (in --velero-namespace) or NAMESPACE/NAME")
	sel.BoolVar(&f.strict, "strict-versions", false, "fail when a resource shares no API version with the target")
	sel.BoolVar(&f.preserveNodePorts, "preserve-nodeports", false, "keep Services' node ports instead of letting the target allocate them")
	sel.StringVar(&f.orSelector, "or-selector", "", "restore only objects whose labels match at least one of these selectors, as Velero's: \"app=web or tier=db\" (not with --selector)")
	sel.StringSliceVar(&f.statusInclude, "status-include-resources", nil, "resources whose status is restored, as Velero's (\"*\" every one; default none); an object's velero.io/restore-status annotation overrides")
	sel.StringSliceVar(&f.statusExclude, "status-exclude-resources", nil, "resources whose status is not restored, as Velero's")
	sel.StringVar(&f.existing, "existing", "adopt", "objects that already exist: adopt (Velero's none), update or fail")
	sel.StringVar(&f.existingPolicy, "existing-resource-policy", "", "Velero's name for --existing: none or update")
	sel.StringArrayVar(&f.disable, "disable-plugin", nil, "switch off a built-in action or plan rule by name (repeatable): "+
		strings.Join(append(slices.Clone(builtin.Names), restore.ControllerManaged, restore.NamespaceDefaults, restore.StatefulSetClaims, restore.ManagedFields), ", "))
	sel.VisitAll(func(fl *pflag.Flag) { _ = sel.SetAnnotation(fl.Name, selectionFlag, nil) })
	fs.AddFlagSet(sel)
}

// session is what plan, restore and verify open alike: the backup, the target, the
// options the flags make, and a context that an interrupt cancels.
type session struct {
	backup *archive.Backup
	velero *veleroSource // the backup was read through Velero
	target restore.Target
	ctx    context.Context
	plan   restore.PlanOptions
	run    restore.RunOptions
	saved  *restore.SavedPlan // --plan
	replan bool
	warn   io.Writer
	close  func()
}

// makePlan plans the restore, or opens the saved plan: refused, with what changed, when
// it no longer holds (unless --replan).
func (s *session) makePlan() (*restore.Plan, error) {
	if s.saved == nil {
		p, err := restore.NewPlan(s.ctx, s.backup, s.target, s.plan)
		if err != nil {
			return nil, &exitError{code: exitBadInput, err: err}
		}
		return p, nil
	}
	p, err := s.saved.Open(s.ctx, s.backup, s.target, s.plan.Extensions)
	var changed *restore.PlanChangedError
	switch {
	case errors.As(err, &changed) && s.replan:
		for _, c := range changed.Changes {
			fmt.Fprintf(s.warn, "restoregraph: warning: replanned: %s\n", c)
		}
	case errors.As(err, &changed):
		var b strings.Builder
		fmt.Fprintf(&b, "the plan no longer holds (--replan goes on with the plan as it is now):")
		for _, c := range changed.Changes {
			b.WriteString("\n  " + c)
		}
		return nil, &exitError{code: exitBadInput, err: errors.New(b.String())}
	case err != nil:
		return nil, &exitError{code: exitBadInput, err: err}
	}
	return p, nil
}

// open reads the backup, connects to the target and starts the plugins; the session's
// close undoes all three. A backup named by --backup is read first, so that a wrong one
// is told before the target is reached; one named through Velero (--from-backup,
// --from-schedule) is read once the plugins that reach its location have started.
func (f *restoreFlags) open(cmd *cobra.Command, t *target) (s *session, err error) {
	ctx, cancel := signalContext()
	warn := cmd.ErrOrStderr()
	closers := []func(){cancel}
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	if f.fromRestoreFile != "" {
		if err := f.readVeleroRestore(cmd); err != nil {
			return nil, err
		}
	}
	var saved *restore.SavedPlan
	if f.planFile != "" {
		if saved, err = f.readPlan(cmd); err != nil {
			return nil, err
		}
	} else if f.replan {
		return nil, badInput("--replan goes with --plan")
	}
	byName, err := f.velero.check(f.backup, f.s3Endpoint, f.pluginDir != "" || len(f.pluginPaths) > 0, t.embedded)
	if err != nil {
		return nil, err
	}
	var b *archive.Backup
	var src *veleroSource
	if !byName {
		var closeBackup func()
		if b, closeBackup, err = readBackup(ctx, f.backup, f.s3Endpoint, warn); err != nil {
			return nil, err
		}
		closers = append(closers, closeBackup)
		f.name = backupName(f.backup)
	}
	tgt, cfg, stopTarget, err := t.restoreTarget()
	if err != nil {
		return nil, err
	}
	closers = append(closers, stopTarget)
	host, commands, stopHost, err := f.pluginHost(cfg, warn)
	if err != nil {
		return nil, err
	}
	closers = append(closers, stopHost)
	if byName {
		if host == nil {
			return nil, badInput("--plugins %s holds no executable: --from-backup and --from-schedule read the backup through its location's object-store plugin", f.pluginDir)
		}
		var closeBackup func()
		if b, src, closeBackup, err = f.velero.read(ctx, cfg, host, commands, warn); err != nil {
			return nil, err
		}
		f.name = src.backup
		closers = append(closers, closeBackup)
	}
	po, ro, err := f.restoreOptions(ctx, cfg, warn, saved == nil)
	if err != nil {
		return nil, err
	}
	ro.Logger = logger(cmd)
	if host != nil {
		if po.Extensions.Plugins, err = f.register(ctx, host, commands, warn); err != nil {
			return nil, err
		}
	}
	return &session{backup: b, velero: src, target: tgt, ctx: ctx, plan: po, run: ro, saved: saved, replan: f.replan, warn: warn, close: closeAll}, nil
}

// readPlan reads the --plan file. Its backup is read from where the plan says, unless
// --backup or --from-backup names it; the flags its selection stands for cannot be given.
func (f *restoreFlags) readPlan(cmd *cobra.Command) (*restore.SavedPlan, error) {
	var given []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if _, ok := fl.Annotations[selectionFlag]; ok {
			given = append(given, "--"+fl.Name)
		}
	})
	if len(given) > 0 {
		return nil, badInput("--plan carries its selection: %s cannot be given with it", strings.Join(given, ", "))
	}
	file, err := os.Open(f.planFile)
	if err != nil {
		return nil, badInput("--plan: %w", err)
	}
	defer file.Close()
	saved, err := restore.ReadPlan(file)
	if err != nil {
		return nil, badInput("--plan %s: %w", f.planFile, err)
	}
	if f.backup == "" && f.velero.backup == "" && f.velero.schedule == "" {
		if saved.Backup.Location == "" {
			return nil, badInput("--plan %s names no backup location: give --backup or --from-backup", f.planFile)
		}
		f.backup = saved.Backup.Location
	}
	return saved, nil
}

// pluginHost returns the host of the plugin executables the flags name, with the
// commands that start them (it starts nothing yet); a nil host when none is named. stop
// ends every process the host started. The plugins' standard error goes to warn.
func (f *restoreFlags) pluginHost(cfg *rest.Config, warn io.Writer) (host *velerohost.Host, commands [][]string, stop func(), err error) {
	stop = func() {}
	paths := slices.Clone(f.pluginPaths)
	if f.pluginDir != "" {
		found, err := velerohost.Executables(f.pluginDir)
		if err != nil {
			return nil, nil, stop, badInput("--plugins: %w", err)
		}
		paths = append(paths, found...)
	}
	if len(paths) == 0 {
		return nil, nil, stop, nil
	}
	// Velero's own actions build a Kubernetes client when they start, from $KUBECONFIG:
	// they are given the target's.
	kubeconfig, err := writeKubeconfig(cfg)
	if err != nil {
		return nil, nil, stop, err
	}
	host = &velerohost.Host{Env: []string{"KUBECONFIG=" + kubeconfig}, Log: warn}
	for _, p := range paths {
		commands = append(commands, []string{p})
	}
	return host, commands, func() { host.Close(); os.Remove(kubeconfig) }, nil
}

// register registers the RestoreItemActions the plugins serve, but those disabled.
func (f *restoreFlags) register(ctx context.Context, host *velerohost.Host, commands [][]string, warn io.Writer) (*plugin.Registry, error) {
	found, err := host.Discover(ctx, commands...)
	if err != nil {
		fmt.Fprintf(warn, "restoregraph: warning: %v\n", err)
	}
	reg := &plugin.Registry{}
	return reg, host.Register(reg, found, f.disable...)
}

// writeKubeconfig writes cfg as a kubeconfig file only this user reads, for plugin
// processes: every way cfg authenticates goes with it, an exec credential plugin or an
// auth provider (EKS, GKE, AKS) and impersonation included.
func writeKubeconfig(cfg *rest.Config) (string, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["target"] = &clientcmdapi.Cluster{Server: cfg.Host, InsecureSkipTLSVerify: cfg.Insecure,
		CertificateAuthority: cfg.CAFile, CertificateAuthorityData: cfg.CAData, TLSServerName: cfg.ServerName}
	user := &clientcmdapi.AuthInfo{Token: cfg.BearerToken, TokenFile: cfg.BearerTokenFile,
		ClientCertificate: cfg.CertFile, ClientCertificateData: cfg.CertData, ClientKey: cfg.KeyFile, ClientKeyData: cfg.KeyData,
		Username: cfg.Username, Password: cfg.Password, AuthProvider: cfg.AuthProvider,
		Impersonate: cfg.Impersonate.UserName, ImpersonateUID: cfg.Impersonate.UID, ImpersonateGroups: cfg.Impersonate.Groups,
		ImpersonateUserExtra: cfg.Impersonate.Extra}
	if cfg.ExecProvider != nil {
		user.Exec = cfg.ExecProvider.DeepCopy()
		if user.Exec.InteractiveMode == "" {
			user.Exec.InteractiveMode = clientcmdapi.IfAvailableExecInteractiveMode
		}
	}
	kc.AuthInfos["restoregraph"] = user
	kc.Contexts["target"] = &clientcmdapi.Context{Cluster: "target", AuthInfo: "restoregraph"}
	kc.CurrentContext = "target"
	f, err := os.CreateTemp("", "restoregraph-kubeconfig-*") // 0600
	if err != nil {
		return "", err
	}
	f.Close()
	return f.Name(), clientcmd.WriteToFile(*kc, f.Name())
}

// restoreOptions turns the flags into the restore's options: the selection only with
// selection (a saved plan carries its own). cfg reaches the target, for its ConfigMap of
// version priorities; warnings about skipped priority lines go to warn.
func (f *restoreFlags) restoreOptions(ctx context.Context, cfg *rest.Config, warn io.Writer, selection bool) (restore.PlanOptions, restore.RunOptions, error) {
	po := restore.PlanOptions{BackupName: f.name, BackupLocation: f.location()}
	ro := restore.RunOptions{Name: f.restoreName}
	var err error
	if ro.Admitter, err = newAdmitter(f.admission, f.admissionNamespace, cfg); err != nil {
		return po, ro, err
	}
	ro.OnAdmissionWait = func(cs []admission.Conflict) {
		for _, c := range cs {
			fmt.Fprintf(warn, "restoregraph: waiting for %v\n", c)
		}
	}
	if !selection {
		return po, ro, nil
	}
	var opts restore.Selection
	if f.fromRestore != nil {
		// The Restore's, with restoregraph's own that Velero's Restore has no field for.
		opts = f.fromRestore.Selection
		opts.StrictVersions, opts.Disable = f.strict, f.disable
	} else if opts, err = f.selection(); err != nil {
		return po, ro, err
	}
	// Lenient, as Velero: a bad line is skipped with a warning naming it.
	parse := versionselect.ParseOptions{Lenient: true}
	var skipped []*versionselect.PriorityError
	switch {
	case f.priorities != "":
		opts.Priorities, skipped, err = versionselect.ReadPrioritiesFile(f.priorities, parse)
		if err != nil {
			return po, ro, badInput("%w", err)
		}
	case f.prioritiesConfigMap != "":
		ns, name, ok := strings.Cut(f.prioritiesConfigMap, "/")
		if !ok || ns == "" || name == "" {
			return po, ro, badInput("--version-priorities-configmap %q: want NAMESPACE/NAME", f.prioritiesConfigMap)
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return po, ro, err
		}
		opts.Priorities, skipped, err = versionselect.LoadPriorities(ctx, cs.CoreV1(), ns, name, parse)
		if err != nil {
			return po, ro, err
		}
	}
	for _, s := range skipped {
		fmt.Fprintf(warn, "restoregraph: warning: %v: skipped\n", s)
	}
	if opts.Modifiers, err = f.readModifiers(ctx, cfg); err != nil {
		return po, ro, err
	}
	po.Selection = opts
	return po, ro, nil
}

// selection is what the selection flags say, but for the version priorities and the
// modifiers, which restoreOptions reads.
func (f *restoreFlags) selection() (restore.Selection, error) {
	policy := f.existing
	if f.existingPolicy != "" {
		if f.existing != "adopt" {
			return restore.Selection{}, badInput("--existing and --existing-resource-policy say the same: give one")
		}
		if f.existingPolicy != "none" && f.existingPolicy != "update" {
			return restore.Selection{}, badInput("--existing-resource-policy %q: none or update, as Velero's (--existing takes adopt, update or fail)", f.existingPolicy)
		}
		policy = f.existingPolicy
	}
	existing, err := restore.ParseExisting(policy)
	if err != nil {
		return restore.Selection{}, badInput("--existing: %w", err)
	}
	sel := restore.Selection{StrictVersions: f.strict, PreserveNodePorts: f.preserveNodePorts, Disable: f.disable, Existing: existing}
	if sel.Filter, err = f.spec(); err != nil {
		return sel, err
	}
	if f.orSelector != "" {
		if f.selector != "" {
			return sel, badInput("--selector and --or-selector each select by labels: give one, as Velero takes one")
		}
		if sel.Filter.OrSelectors, err = filter.ParseOr(f.orSelector); err != nil {
			return sel, badInput("--or-selector: %w", err)
		}
	}
	if len(f.statusInclude) > 0 || len(f.statusExclude) > 0 {
		sel.RestoreStatus = &restore.StatusSelection{IncludedResources: f.statusInclude, ExcludedResources: f.statusExclude}
	}
	if sel.NamespaceMappings, err = parseMappings(f.namespaceMappings); err != nil {
		return sel, err
	}
	return sel, nil
}

// readVeleroRestore reads --from-velero-restore: the Restore names its backup, its name,
// Velero's namespace and what it restores, so the flags that say these cannot be given.
func (f *restoreFlags) readVeleroRestore(cmd *cobra.Command) error {
	var given []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		_, selection := fl.Annotations[selectionFlag]
		switch {
		case fl.Name == "version-priorities" || fl.Name == "version-priorities-configmap" || fl.Name == "strict-versions" || fl.Name == "disable-plugin":
			// not in Velero's Restore: restoregraph's own, taken beside it
		case selection || slices.Contains([]string{"backup", "from-backup", "from-schedule", "restore-name", "plan"}, fl.Name):
			given = append(given, "--"+fl.Name)
		}
	})
	if len(given) > 0 {
		return badInput("--from-velero-restore names the backup and says what to restore: %s cannot be given with it", strings.Join(given, ", "))
	}
	data, err := os.ReadFile(f.fromRestoreFile)
	if err != nil {
		return badInput("--from-velero-restore: %w", err)
	}
	r, err := velerohost.ReadRestore(data)
	if err != nil {
		return badInput("--from-velero-restore %s: %w", f.fromRestoreFile, err)
	}
	if r.Namespace != "" && r.Namespace != f.velero.namespace {
		if cmd.Flags().Changed("velero-namespace") {
			return badInput("--from-velero-restore %s is in namespace %s, --velero-namespace says %s", f.fromRestoreFile, r.Namespace, f.velero.namespace)
		}
		f.velero.namespace = r.Namespace
	}
	f.velero.backup, f.velero.schedule, f.restoreName = r.Backup, r.Schedule, r.Name
	f.modifiersConfigMap = r.ModifierConfigMap
	f.fromRestore = r
	return nil
}

// readModifiers reads --resource-modifiers or --resource-modifier-configmap; nil when
// neither is given.
func (f *restoreFlags) readModifiers(ctx context.Context, cfg *rest.Config) (*modifier.Modifiers, error) {
	switch {
	case f.modifiers != "" && f.modifiersConfigMap != "":
		return nil, badInput("--resource-modifiers and --resource-modifier-configmap: give one")
	case f.modifiers != "":
		data, err := os.ReadFile(f.modifiers)
		if err != nil {
			return nil, badInput("--resource-modifiers: %w", err)
		}
		m, err := modifier.Parse(data)
		if err != nil {
			return nil, badInput("--resource-modifiers %s: %w", f.modifiers, err)
		}
		return m, nil
	case f.modifiersConfigMap != "":
		ns, name, ok := strings.Cut(f.modifiersConfigMap, "/")
		if !ok {
			ns, name = f.velero.namespace, f.modifiersConfigMap
		}
		if ns == "" || name == "" {
			return nil, badInput("--resource-modifier-configmap %q: want NAME or NAMESPACE/NAME", f.modifiersConfigMap)
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, badInput("--resource-modifier-configmap: no ConfigMap %s/%s in the target", ns, name)
		}
		if err != nil {
			return nil, fmt.Errorf("--resource-modifier-configmap: %w", err)
		}
		m, err := modifier.FromConfigMap(cm)
		if err != nil {
			return nil, badInput("--resource-modifier-configmap: %w", err)
		}
		return m, nil
	}
	return nil, nil
}

// location is where --backup says the backup is, for a saved plan to name it: a file as
// an absolute path, a URL as it is; "" for a backup named through Velero.
func (f *restoreFlags) location() string {
	if f.backup == "" || strings.Contains(f.backup, "://") {
		return f.backup
	}
	if abs, err := filepath.Abs(f.backup); err == nil {
		return abs
	}
	return f.backup
}

// veleroSpec is what the filter flags select, in the fields of Velero's Backup and
// Restore specs that say the same.
func (f *filterFlags) veleroSpec() map[string]any {
	spec := map[string]any{}
	for key, v := range map[string][]string{"includedNamespaces": f.includeNamespaces, "excludedNamespaces": f.excludeNamespaces,
		"includedResources": f.includeResources, "excludedResources": f.excludeResources} {
		if len(v) > 0 {
			spec[key] = slices.Clone(v)
		}
	}
	if v := f.includeClusterResources.value; v != nil {
		spec["includeClusterResources"] = *v
	}
	if f.selector != "" {
		if sel, err := metav1.ParseToLabelSelector(f.selector); err == nil {
			if u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(sel); err == nil {
				spec["labelSelector"] = u
			}
		}
	}
	return spec
}

// parseMappings reads src1:dst1,src2:dst2.
func parseMappings(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		src, dst, ok := strings.Cut(strings.TrimSpace(pair), ":")
		for _, ns := range []string{src, dst} {
			if msgs := validation.IsDNS1123Label(ns); !ok || len(msgs) > 0 {
				return nil, badInput("--namespace-mappings %q: %q is not src:dst of two namespace names", s, pair)
			}
		}
		if _, dup := out[src]; dup {
			return nil, badInput("--namespace-mappings %q: %s is mapped twice", s, src)
		}
		out[src] = dst
	}
	return out, nil
}

// backupName is the backup's name, from its file's: nightly.tar.gz is nightly, and so is
// s3://bucket/velero/nightly.
func backupName(path string) string {
	if u, err := url.Parse(path); err == nil && strings.Contains(path, "://") {
		path = u.Path
	}
	base := filepath.Base(path)
	for _, ext := range []string{".tar.gz", ".tgz", ".tar"} {
		base = strings.TrimSuffix(base, ext)
	}
	return base
}

// optionalBool is a flag that may be true, false or not given.
type optionalBool struct{ value *bool }

func (o *optionalBool) String() string {
	if o.value == nil {
		return ""
	}
	return strconv.FormatBool(*o.value)
}

func (o *optionalBool) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	o.value = &b
	return nil
}

func (o *optionalBool) Type() string { return "bool" }

// newAdmitter returns the admitter --admission names; nil for off.
func newAdmitter(mode, namespace string, cfg *rest.Config) (admission.Admitter, error) {
	switch mode {
	case "off":
		return nil, nil
	case "local":
		return &admission.Local{}, nil
	case "cluster":
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		return &admission.Cluster{Client: cs, Namespace: namespace}, nil
	}
	return nil, badInput("--admission must be cluster, local or off, not %q", mode)
}
