package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	proto "github.com/vmware-tanzu/velero/pkg/plugin/generated"

	"github.com/restoregraph/restoregraph/restore"
)

// KindVolumeSnapshotter is Velero's VolumeSnapshotter plugin kind: what a
// VolumeSnapshotLocation's provider names, and what makes a volume of a snapshot.
const KindVolumeSnapshotter = "VolumeSnapshotter"

// ErrNoVolumeSnapshotter is returned when no executable given serves the
// VolumeSnapshotter a location names.
var ErrNoVolumeSnapshotter = errors.New("no plugin serves the volume snapshotter")

// VolumeSnapshotter is a VolumeSnapshotter plugin run out of process as Velero runs it,
// initialized with one VolumeSnapshotLocation's config: a restore.VolumeSnapshotter.
type VolumeSnapshotter struct {
	p      *process
	name   string
	config map[string]string

	mu          sync.Mutex
	initialized int // the process start the plugin was initialized in
}

var _ restore.VolumeSnapshotter = (*VolumeSnapshotter)(nil)

// VolumeSnapshotter finds the executable among commands that serves the
// VolumeSnapshotter name (ProviderPlugin of a location's provider) and returns it
// initialized with config, as Velero initializes it for a restore (the location's
// config, with credentialsFile when the location names a credential). The plugin is
// initialized again whenever its process is started again.
func (h *Host) VolumeSnapshotter(ctx context.Context, name string, config map[string]string, commands ...[]string) (*VolumeSnapshotter, error) {
	p, err := h.serving(ctx, KindVolumeSnapshotter, name, ErrNoVolumeSnapshotter, commands)
	if err != nil {
		return nil, err
	}
	v := &VolumeSnapshotter{p: p, name: name, config: config}
	_, call, err := v.client(ctx)
	if err != nil {
		return nil, err
	}
	return v, call.end(ctx, nil)
}

// client begins a call on the plugin's client, initialized in the running process; the
// caller ends the call.
func (v *VolumeSnapshotter) client(ctx context.Context) (proto.VolumeSnapshotterClient, *call, error) {
	call, err := v.p.begin(KindVolumeSnapshotter)
	if err != nil {
		return nil, nil, err
	}
	c := proto.NewVolumeSnapshotterClient(call.conn)
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.initialized != call.inst.start {
		if _, err := c.Init(ctx, &proto.VolumeSnapshotterInitRequest{Plugin: v.name, Config: v.config}); err != nil {
			return nil, nil, fmt.Errorf("volume snapshotter %s: Init: %w", v.name, call.end(ctx, err))
		}
		v.initialized = call.inst.start
	}
	return c, call, nil
}

// CreateVolumeFromSnapshot makes a volume of s in the provider and returns its ID.
func (v *VolumeSnapshotter) CreateVolumeFromSnapshot(ctx context.Context, s restore.NativeSnapshot) (string, error) {
	c, call, err := v.client(ctx)
	if err != nil {
		return "", err
	}
	req := &proto.CreateVolumeRequest{Plugin: v.name, SnapshotID: s.ID, VolumeType: s.VolumeType, VolumeAZ: s.AZ}
	if s.IOPS != nil {
		req.Iops = *s.IOPS
	}
	resp, err := c.CreateVolumeFromSnapshot(ctx, req)
	if err := call.end(ctx, err); err != nil {
		return "", fmt.Errorf("volume snapshotter %s: a volume of snapshot %s: %w", v.name, s.ID, err)
	}
	return resp.VolumeID, nil
}

// SetVolumeID returns pv pointed at the provider's volume id, as the plugin writes it.
func (v *VolumeSnapshotter) SetVolumeID(ctx context.Context, pv *unstructured.Unstructured, id string) (*unstructured.Unstructured, error) {
	data, err := pv.MarshalJSON()
	if err != nil {
		return nil, err
	}
	c, call, err := v.client(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := c.SetVolumeID(ctx, &proto.SetVolumeIDRequest{Plugin: v.name, PersistentVolume: data, VolumeID: id})
	if err := call.end(ctx, err); err != nil {
		return nil, fmt.Errorf("volume snapshotter %s: persistentvolume %s to volume %s: %w", v.name, pv.GetName(), id, err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(resp.PersistentVolume); err != nil {
		return nil, fmt.Errorf("volume snapshotter %s: persistentvolume %s: %w", v.name, pv.GetName(), err)
	}
	return out, nil
}
