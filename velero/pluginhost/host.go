package pluginhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	proto "github.com/vmware-tanzu/velero/pkg/plugin/generated"
	protov2 "github.com/vmware-tanzu/velero/pkg/plugin/generated/restoreitemaction/v2"

	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	riav2 "github.com/restoregraph/restoregraph/plugin/restoreitemaction/v2"
)

// The plugin kinds the host speaks, named as Velero names them.
const (
	KindRestoreItemAction   = "RestoreItemAction"
	KindRestoreItemActionV2 = "RestoreItemActionV2"
	kindPluginLister        = "PluginLister"
)

// handshake is Velero's: a plugin built with its framework answers only to it.
var handshake = goplugin.HandshakeConfig{ProtocolVersion: 2, MagicCookieKey: "VELERO_PLUGIN", MagicCookieValue: "hello"}

// Plugin is one RestoreItemAction an executable serves.
type Plugin struct {
	// Command is the executable, and Args what it is started with ("run-plugins" for
	// the velero binary).
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	Name    string   `json:"name"`
	Kind    string   `json:"kind"` // KindRestoreItemAction or KindRestoreItemActionV2
	// AppliesTo is the plugin's selector, as it answered.
	AppliesTo ria.ResourceSelector `json:"appliesTo"`
}

// Host runs plugin executables. The zero value has no environment of its own: plugins
// get the host process's.
type Host struct {
	// Env is added to the plugins' environment: KUBECONFIG for those that build a
	// Kubernetes client when they start.
	Env []string
	// Log receives the plugins' standard error; default io.Discard.
	Log io.Writer

	mu    sync.Mutex
	procs map[string]*process
}

// Executables returns the plugin executables under dir, as Velero's server finds them
// in /plugins: the directory is read recursively, and an entry whose mode has an
// executable bit is a plugin, a symbolic link to an executable file included. A link
// to a directory is not followed, as Velero does not follow it. A dir that does not
// exist holds none, as for Velero.
func Executables(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if e.IsDir() {
			sub, err := Executables(path)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
			continue
		}
		info, err := os.Stat(path) // a link's target
		if err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			continue
		}
		out = append(out, path)
	}
	sort.Strings(out)
	return out, nil
}

// VeleroBinary is the name of Velero's own command, which serves Velero's built-in
// plugins when run as "velero run-plugins".
const VeleroBinary = "velero"

// Command is how executable path is started to serve its plugins: Velero's own command
// (named velero) with run-plugins, as Velero's server runs itself, any other as it is.
func Command(path string) []string {
	if filepath.Base(path) == VeleroBinary {
		return []string{path, "run-plugins"}
	}
	return []string{path}
}

// Discover starts each executable (command and its arguments) and returns the
// RestoreItemActions it serves, with what each applies to. A plugin whose AppliesTo
// fails (one that cannot initialize in this environment) is left out, and its error is
// among those returned beside the plugins that work.
func (h *Host) Discover(ctx context.Context, commands ...[]string) ([]Plugin, error) {
	var out []Plugin
	var failed []error
	for _, c := range commands {
		p, ids, err := h.list(ctx, c)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if id.Kind != KindRestoreItemAction && id.Kind != KindRestoreItemActionV2 {
				continue
			}
			pl := Plugin{Command: c[0], Args: c[1:], Name: id.Name, Kind: id.Kind}
			if pl.AppliesTo, err = h.appliesTo(ctx, p, pl); err != nil {
				failed = append(failed, fmt.Errorf("pluginhost: plugin %s: AppliesTo: %w", pl.Name, err))
				continue
			}
			out = append(out, pl)
		}
	}
	return out, errors.Join(failed...)
}

// list starts the executable c (command and its arguments) and returns the plugins it
// serves.
func (h *Host) list(ctx context.Context, c []string) (*process, []*proto.PluginIdentifier, error) {
	p := h.process(c[0], c[1:])
	call, err := p.begin(kindPluginLister)
	if err != nil {
		return nil, nil, err
	}
	resp, err := proto.NewPluginListerClient(call.conn).ListPlugins(ctx, &proto.Empty{})
	if err := call.end(ctx, err); err != nil {
		return nil, nil, fmt.Errorf("pluginhost: %s: list plugins: %w", c[0], err)
	}
	return p, resp.Plugins, nil
}

// Register registers the plugins in reg, but those named in disabled: v2 ones at V2, v1
// ones at V1.
func (h *Host) Register(reg *plugin.Registry, plugins []Plugin, disabled ...string) error {
	for _, pl := range plugins {
		if slices.Contains(disabled, pl.Name) {
			continue
		}
		a := &action{h: h, p: h.process(pl.Command, pl.Args), pl: pl}
		version := plugin.V1
		var impl any = v1Action{a}
		if pl.Kind == KindRestoreItemActionV2 {
			version, impl = plugin.V2, a
		}
		if err := reg.Register(pl.Name, version, impl); err != nil {
			return err
		}
	}
	return nil
}

// Close ends every plugin process.
func (h *Host) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.procs {
		p.close()
	}
}

func (h *Host) process(command string, args []string) *process {
	h.mu.Lock()
	defer h.mu.Unlock()
	key := command + "\x00" + fmt.Sprint(args)
	if h.procs == nil {
		h.procs = map[string]*process{}
	}
	p := h.procs[key]
	if p == nil {
		log := h.Log
		if log == nil {
			log = io.Discard
		}
		p = &process{command: command, args: args, env: h.Env, log: log}
		h.procs[key] = p
	}
	return p
}

func (h *Host) appliesTo(ctx context.Context, p *process, pl Plugin) (ria.ResourceSelector, error) {
	var sel *proto.ResourceSelector
	switch pl.Kind {
	case KindRestoreItemActionV2:
		call, err := p.begin(pl.Kind)
		if err != nil {
			return ria.ResourceSelector{}, err
		}
		resp, err := protov2.NewRestoreItemActionClient(call.conn).AppliesTo(ctx, &protov2.RestoreItemActionAppliesToRequest{Plugin: pl.Name})
		if err := call.end(ctx, err); err != nil {
			return ria.ResourceSelector{}, err
		}
		sel = resp.ResourceSelector
	default:
		call, err := p.begin(pl.Kind)
		if err != nil {
			return ria.ResourceSelector{}, err
		}
		resp, err := proto.NewRestoreItemActionClient(call.conn).AppliesTo(ctx, &proto.RestoreItemActionAppliesToRequest{Plugin: pl.Name})
		if err := call.end(ctx, err); err != nil {
			return ria.ResourceSelector{}, err
		}
		sel = resp.ResourceSelector
	}
	if sel == nil {
		return ria.ResourceSelector{}, nil
	}
	return ria.ResourceSelector{IncludedNamespaces: sel.IncludedNamespaces, ExcludedNamespaces: sel.ExcludedNamespaces,
		IncludedResources: sel.IncludedResources, ExcludedResources: sel.ExcludedResources, LabelSelector: sel.Selector}, nil
}

// action is one plugin of an executable, called over gRPC.
type action struct {
	h  *Host
	p  *process
	pl Plugin
}

// v1Action is an action served at v1: without AreAdditionalItemsReady, so that the
// registry adapts it as any v1 plugin.
type v1Action struct{ a *action }

func (v v1Action) AppliesTo() (ria.ResourceSelector, error) { return v.a.AppliesTo() }
func (v v1Action) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	return v.a.ExecuteContext(context.Background(), in)
}
func (v v1Action) ExecuteContext(ctx context.Context, in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	return v.a.ExecuteContext(ctx, in)
}

func (a *action) AppliesTo() (ria.ResourceSelector, error) { return a.pl.AppliesTo, nil }

func (a *action) Execute(in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	return a.ExecuteContext(context.Background(), in)
}

func (a *action) AreAdditionalItemsReady(items []ria.ResourceIdentifier, r *ria.Restore) (bool, error) {
	return a.AreAdditionalItemsReadyContext(context.Background(), items, r)
}

// ExecuteContext calls the plugin's Execute over gRPC.
func (a *action) ExecuteContext(ctx context.Context, in *ria.ExecuteInput) (*ria.ExecuteOutput, error) {
	item, err := in.Item.MarshalJSON()
	if err != nil {
		return nil, err
	}
	fromBackup, err := in.ItemFromBackup.MarshalJSON()
	if err != nil {
		return nil, err
	}
	restore := restoreJSON(in.Restore)
	call, err := a.p.begin(a.pl.Kind)
	if err != nil {
		return nil, err
	}
	var (
		updated  []byte
		items    []*proto.ResourceIdentifier
		skip     bool
		wait     bool
		waitTime time.Duration
		op       string
	)
	if a.pl.Kind == KindRestoreItemActionV2 {
		resp, err := protov2.NewRestoreItemActionClient(call.conn).Execute(ctx, &protov2.RestoreItemActionExecuteRequest{
			Plugin: a.pl.Name, Item: item, ItemFromBackup: fromBackup, Restore: restore})
		if err := call.end(ctx, err); err != nil {
			return nil, err
		}
		updated, items, skip, wait, op = resp.Item, resp.AdditionalItems, resp.SkipRestore, resp.WaitForAdditionalItems, resp.OperationID
		if resp.AdditionalItemsReadyTimeout != nil {
			waitTime = resp.AdditionalItemsReadyTimeout.AsDuration()
		}
	} else {
		resp, err := proto.NewRestoreItemActionClient(call.conn).Execute(ctx, &proto.RestoreItemActionExecuteRequest{
			Plugin: a.pl.Name, Item: item, ItemFromBackup: fromBackup, Restore: restore})
		if err := call.end(ctx, err); err != nil {
			return nil, err
		}
		updated, items, skip = resp.Item, resp.AdditionalItems, resp.SkipRestore
	}
	out := &ria.ExecuteOutput{SkipRestore: skip, WaitForAdditionalItems: wait, AdditionalItemsReadyTimeout: waitTime, OperationID: op}
	if len(updated) > 0 {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(updated); err != nil {
			return nil, fmt.Errorf("plugin %s: the updated item: %w", a.pl.Name, err)
		}
		out.UpdatedItem = u
	}
	for _, it := range items {
		out.AdditionalItems = append(out.AdditionalItems, ria.ResourceIdentifier{
			GroupResource: schema.GroupResource{Group: it.Group, Resource: it.Resource}, Namespace: it.Namespace, Name: it.Name})
	}
	return out, nil
}

// AreAdditionalItemsReadyContext calls a v2 plugin's AreAdditionalItemsReady over gRPC.
func (a *action) AreAdditionalItemsReadyContext(ctx context.Context, items []ria.ResourceIdentifier, r *ria.Restore) (bool, error) {
	call, err := a.p.begin(a.pl.Kind)
	if err != nil {
		return false, err
	}
	req := &protov2.RestoreItemActionItemsReadyRequest{Plugin: a.pl.Name, Restore: restoreJSON(r)}
	for _, it := range items {
		req.AdditionalItems = append(req.AdditionalItems, &proto.ResourceIdentifier{Group: it.Group, Resource: it.Resource, Namespace: it.Namespace, Name: it.Name})
	}
	resp, err := protov2.NewRestoreItemActionClient(call.conn).AreAdditionalItemsReady(ctx, req)
	if err := call.end(ctx, err); err != nil {
		return false, err
	}
	return resp.Ready, nil
}

// Progress calls a v2 plugin's Progress over gRPC: how the operation its Execute
// started stands.
func (a *action) Progress(ctx context.Context, id string, r *ria.Restore) (riav2.OperationProgress, error) {
	call, err := a.p.begin(a.pl.Kind)
	if err != nil {
		return riav2.OperationProgress{}, err
	}
	resp, err := protov2.NewRestoreItemActionClient(call.conn).Progress(ctx, &protov2.RestoreItemActionProgressRequest{
		Plugin: a.pl.Name, OperationID: id, Restore: restoreJSON(r)})
	if err := call.end(ctx, err); err != nil {
		return riav2.OperationProgress{}, err
	}
	p := resp.GetProgress()
	if p == nil {
		return riav2.OperationProgress{}, fmt.Errorf("plugin %s: Progress of %s: no progress in the answer", a.pl.Name, id)
	}
	out := riav2.OperationProgress{Completed: p.Completed, Err: p.Err, NCompleted: p.NCompleted, NTotal: p.NTotal,
		OperationUnits: p.OperationUnits, Description: p.Description}
	if p.Started != nil {
		out.Started = p.Started.AsTime()
	}
	if p.Updated != nil {
		out.Updated = p.Updated.AsTime()
	}
	return out, nil
}

// Cancel calls a v2 plugin's Cancel over gRPC.
func (a *action) Cancel(ctx context.Context, id string, r *ria.Restore) error {
	call, err := a.p.begin(a.pl.Kind)
	if err != nil {
		return err
	}
	_, err = protov2.NewRestoreItemActionClient(call.conn).Cancel(ctx, &protov2.RestoreItemActionCancelRequest{
		Plugin: a.pl.Name, OperationID: id, Restore: restoreJSON(r)})
	return call.end(ctx, err)
}

var _ riav2.AsyncAction = (*action)(nil)

// restoreJSON is the Velero Restore a plugin is given: its name, namespace (Velero's
// by default) and UID, and its spec with the backup's name.
func restoreJSON(r *ria.Restore) []byte {
	name, backup, ns := "restoregraph", "", "velero"
	var uid types.UID
	spec := map[string]any{}
	if r != nil {
		name, backup, uid = r.Name, r.Backup, r.UID
		if r.Namespace != "" {
			ns = r.Namespace
		}
		maps.Copy(spec, r.Spec)
	}
	spec["backupName"] = backup
	md := map[string]any{"name": name, "namespace": ns}
	if uid != "" {
		md["uid"] = string(uid)
	}
	data, _ := json.Marshal(map[string]any{"apiVersion": "velero.io/v1", "kind": "Restore", "metadata": md, "spec": spec})
	return data
}
