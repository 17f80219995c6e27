package velero

import (
	"context"
	"errors"
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero/pluginhost"
)

// ErrSnapshotLocationNotFound is a VolumeSnapshotLocation a backup's native snapshot was
// made through that Velero's namespace does not hold.
var ErrSnapshotLocationNotFound = errors.New("no such volume snapshot location")

var snapshotLocationsResource = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "volumesnapshotlocations"}

// SnapshotLocation is a VolumeSnapshotLocation: the provider whose VolumeSnapshotter
// makes volumes of the snapshots made through it, and how to configure it.
type SnapshotLocation struct {
	Name     string
	Provider string
	Config   map[string]string
	// Credential is the key of a Secret in Velero's namespace that the plugin is given
	// as a file (credentialsFile); nil leaves the plugin to its environment's.
	Credential *SecretKey
}

// SnapshotLocation reads VolumeSnapshotLocation name.
func (v Client) SnapshotLocation(ctx context.Context, name string) (SnapshotLocation, error) {
	ns := v.namespace()
	o, err := v.Dynamic.Resource(snapshotLocationsResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return SnapshotLocation{}, fmt.Errorf("%w: %s/%s", ErrSnapshotLocationNotFound, ns, name)
	}
	if err != nil {
		return SnapshotLocation{}, fmt.Errorf("volume snapshot location %s/%s: %w", ns, name, err)
	}
	loc := SnapshotLocation{Name: name, Credential: secretKey(o, "spec", "credential")}
	loc.Provider, _, _ = unstructured.NestedString(o.Object, "spec", "provider")
	loc.Config, _, _ = unstructured.NestedStringMap(o.Object, "spec", "config")
	if loc.Provider == "" {
		return SnapshotLocation{}, fmt.Errorf("%w: volume snapshot location %s/%s names no provider", ErrLocationInvalid, ns, name)
	}
	return loc, nil
}

// VolumeSnapshotters returns, for restore.Extensions.VolumeSnapshotters, the
// VolumeSnapshotter of each VolumeSnapshotLocation the native snapshots of vols were
// made through, configured as Velero configures it for a restore: the location's
// config, with the credential's Secret key written to a file only this user reads, as
// credentialsFile. It sets each snapshot's Provider. A location that cannot be had (it
// does not exist, its Secret key is missing, no plugin among commands serves its
// provider) is a restore.UnavailableSnapshotter saying why, which the plan names for
// each volume it would restore of it. The function returned removes the credentials
// files; the plugins' processes end with host.
func (v Client) VolumeSnapshotters(ctx context.Context, host *pluginhost.Host, vols []restore.Volume, commands ...[]string) (map[string]restore.VolumeSnapshotter, func()) {
	out := map[string]restore.VolumeSnapshotter{}
	providers := map[string]string{}
	var removes []func()
	for _, vol := range vols {
		s := vol.Snapshot
		if vol.Method != restore.VolumeNativeSnapshot || s == nil {
			continue
		}
		if _, done := out[s.Location]; !done {
			vs, provider, remove, err := v.openSnapshotter(ctx, host, s.Location, commands)
			if err != nil {
				out[s.Location] = restore.UnavailableSnapshotter{Err: err}
			} else {
				out[s.Location] = vs
				removes = append(removes, remove)
			}
			providers[s.Location] = provider
		}
		s.Provider = providers[s.Location]
	}
	return out, func() {
		for _, rm := range removes {
			rm()
		}
	}
}

// openSnapshotter opens the VolumeSnapshotter of location name; the function returned
// removes its credentials file.
func (v Client) openSnapshotter(ctx context.Context, host *pluginhost.Host, name string, commands [][]string) (restore.VolumeSnapshotter, string, func(), error) {
	loc, err := v.SnapshotLocation(ctx, name)
	if err != nil {
		return nil, "", nil, err
	}
	config := maps.Clone(loc.Config)
	if config == nil {
		config = map[string]string{}
	}
	remove := func() {}
	if loc.Credential != nil {
		creds, err := v.secret(ctx, loc.Credential)
		if err != nil {
			return nil, loc.Provider, nil, fmt.Errorf("credential: %w", err)
		}
		var path string
		if path, remove, err = writeSecretFile(creds); err != nil {
			return nil, loc.Provider, nil, err
		}
		config["credentialsFile"] = path
	}
	vs, err := host.VolumeSnapshotter(ctx, pluginhost.ProviderPlugin(loc.Provider), config, commands...)
	if err != nil {
		remove()
		return nil, loc.Provider, nil, err
	}
	return vs, loc.Provider, remove, nil
}
