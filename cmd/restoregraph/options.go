package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/modifier"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero"
	"github.com/restoregraph/restoregraph/versionselect"
)

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
		opts.StrictVersions, opts.Disabled = f.strict, restore.DisabledByName(f.disable...)
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
	if opts.Order, err = f.readOrder(ctx, cfg); err != nil {
		return po, ro, err
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
	sel := restore.Selection{StrictVersions: f.strict, PreserveNodePorts: f.preserveNodePorts, Disabled: restore.DisabledByName(f.disable...),
		Existing: existing, RestorePVs: f.restoreVolumes.value}
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
	r, err := velero.ReadRestore(data)
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

const defaultOrderConfigMap = "velero/" + restore.OrderConfigMap

// readOrder reads the restore order from --restore-order's file, or else from
// --restore-order-configmap's ConfigMap when the target has it.
func (f *restoreFlags) readOrder(ctx context.Context, cfg *rest.Config) (*restore.Order, error) {
	var order *restore.Order
	var err error
	switch {
	case f.order != "":
		order, err = restore.ReadOrderFile(f.order)
	case f.orderConfigMap != "":
		ns, name, ok := strings.Cut(f.orderConfigMap, "/")
		if !ok || ns == "" || name == "" {
			return nil, badInput("--restore-order-configmap %q: want NAMESPACE/NAME", f.orderConfigMap)
		}
		cs, cerr := kubernetes.NewForConfig(cfg)
		if cerr != nil {
			return nil, cerr
		}
		order, err = restore.LoadOrder(ctx, cs.CoreV1(), ns, name)
		if apierrors.IsForbidden(err) && f.orderConfigMap == defaultOrderConfigMap {
			return nil, nil // not asked for, and kept where the user may not look
		}
	}
	if errors.Is(err, restore.ErrOrder) || errors.Is(err, fs.ErrNotExist) {
		return nil, badInput("%w", err)
	}
	return order, err
}
