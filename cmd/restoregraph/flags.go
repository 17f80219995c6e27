package main

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/plugin/builtin"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero"
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
	order, orderConfigMap           string
	modifiers, modifiersConfigMap   string
	strict, preserveNodePorts       bool
	disable                         []string
	existing, existingPolicy        string
	orSelector                      string
	statusInclude, statusExclude    []string
	restoreVolumes                  optionalBool
	fromRestoreFile                 string              // --from-velero-restore
	fromRestore                     *velero.RestoreSpec // what it says
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
	sel.StringVar(&f.order, "restore-order", "", "a file of dependencies between kinds, as Backup for GKE's restore order: "+
		"groupKindDependencies: [{satisfying: {resourceGroup, resourceKind}, requiring: {...}}]; the requiring kind's objects start once the satisfying kind's are healthy")
	sel.StringVar(&f.orderConfigMap, "restore-order-configmap", defaultOrderConfigMap,
		"NAMESPACE/NAME of the target's ConfigMap holding a restore order, read when it exists and no file is given (\"\" for none)")
	sel.StringVar(&f.modifiers, "resource-modifiers", "", "a file of resource modifiers in Velero's format (version v1, YAML or JSON): rules that change objects as they are restored")
	sel.StringVar(&f.modifiersConfigMap, "resource-modifier-configmap", "", "the ConfigMap of resource modifiers in the target, as Velero keeps it: NAME (in --velero-namespace) or NAMESPACE/NAME")
	sel.BoolVar(&f.strict, "strict-versions", false, "fail when a resource shares no API version with the target")
	sel.BoolVar(&f.preserveNodePorts, "preserve-nodeports", false, "keep Services' node ports instead of letting the target allocate them")
	sel.Var(&f.restoreVolumes, "restore-volumes", "restore volumes' data as the backup's volume records say (native and CSI snapshots, data movement), as Velero's: "+
		"true or unset restores it, false provisions each claim again empty and restores native snapshots' volumes as they were")
	sel.Lookup("restore-volumes").NoOptDefVal = "true"
	sel.StringVar(&f.orSelector, "or-selector", "", "restore only objects whose labels match at least one of these selectors, as Velero's: \"app=web or tier=db\" (not with --selector)")
	sel.StringSliceVar(&f.statusInclude, "status-include-resources", nil, "resources whose status is restored, as Velero's (\"*\" every one; default none); an object's velero.io/restore-status annotation overrides")
	sel.StringSliceVar(&f.statusExclude, "status-exclude-resources", nil, "resources whose status is not restored, as Velero's")
	sel.StringVar(&f.existing, "existing", "adopt", "objects that already exist: adopt (Velero's none), update or fail")
	sel.StringVar(&f.existingPolicy, "existing-resource-policy", "", "Velero's name for --existing: none or update")
	names := slices.Clone(builtin.Names)
	for _, r := range restore.Rules {
		names = append(names, string(r))
	}
	sel.StringArrayVar(&f.disable, "disable-plugin", nil, "switch off a built-in action, a plugin or a plan rule by name (repeatable): "+
		strings.Join(append(names, restore.ManagedFields), ", "))
	sel.VisitAll(func(fl *pflag.Flag) { _ = sel.SetAnnotation(fl.Name, selectionFlag, nil) })
	fs.AddFlagSet(sel)
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
