// Command csi-driver is a CSI driver for the integration tests: its volumes and its
// snapshots are directories under --root (volumes/ID, snapshots/ID), so that a test
// writes files into a volume, and reads them back from a volume made of its snapshot.
// It serves CSI's Identity and Controller services on a Unix socket, for the
// external-provisioner and the csi-snapshotter sidecars: volumes made empty or of a
// snapshot, deleted, snapshotted, snapshots deleted and listed. It has no Node service
// and no topology: no kubelet mounts its volumes, and kwok's Pods run without them.
//
//	driver --endpoint /run/csi.sock --root /var/lib/csidriver [--name csi.restoregraph.dev]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func main() {
	endpoint := flag.String("endpoint", "", "the Unix socket to serve CSI on")
	root := flag.String("root", "", "the directory that holds the volumes and snapshots")
	name := flag.String("name", "csi.restoregraph.dev", "the driver's name, as StorageClasses and VolumeSnapshotClasses name it")
	flag.Parse()
	if *endpoint == "" || *root == "" {
		log.Fatal("csidriver: --endpoint and --root are required")
	}
	d := &driver{name: *name, root: *root}
	for _, dir := range []string{"volumes", "snapshots"} {
		if err := os.MkdirAll(filepath.Join(*root, dir), 0o755); err != nil {
			log.Fatal(err)
		}
	}
	os.Remove(*endpoint)
	l, err := net.Listen("unix", *endpoint)
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		log.Printf("%s: %v", info.FullMethod, err)
		return resp, err
	}))
	csi.RegisterIdentityServer(srv, d)
	csi.RegisterControllerServer(srv, d)
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
		<-sig
		srv.GracefulStop()
	}()
	if err := srv.Serve(l); err != nil {
		log.Fatal(err)
	}
}

type driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	name, root string
	mu         sync.Mutex
}

func (d *driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.name, VendorVersion: "1.0.0"}, nil
}

func (d *driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{Type: &csi.PluginCapability_Service_{
		Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}}}}}, nil
}

func (d *driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

func (d *driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, c := range []csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT, csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS} {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: c}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

func (d *driver) volume(id string) string   { return filepath.Join(d.root, "volumes", id) }
func (d *driver) snapshot(id string) string { return filepath.Join(d.root, "snapshots", id) }

// CreateVolume makes the volume named as the request names it, empty or a copy of the
// snapshot it is made of; asked again, it answers with the same volume.
func (d *driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "no name")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	id, size := req.GetName(), req.GetCapacityRange().GetRequiredBytes()
	vol := &csi.Volume{VolumeId: id, CapacityBytes: size, ContentSource: req.GetVolumeContentSource()}
	if _, err := os.Stat(d.volume(id)); err == nil {
		return &csi.CreateVolumeResponse{Volume: vol}, nil
	}
	if snap := req.GetVolumeContentSource().GetSnapshot(); snap != nil {
		if _, err := os.Stat(d.snapshot(snap.GetSnapshotId())); err != nil {
			return nil, status.Errorf(codes.NotFound, "snapshot %s: %v", snap.GetSnapshotId(), err)
		}
		if err := copyDir(d.snapshot(snap.GetSnapshotId()), d.volume(id)); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return &csi.CreateVolumeResponse{Volume: vol}, nil
	}
	if err := os.Mkdir(d.volume(id), 0o755); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.CreateVolumeResponse{Volume: vol}, nil
}

func (d *driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return &csi.DeleteVolumeResponse{}, os.RemoveAll(d.volume(req.GetVolumeId()))
}

// CreateSnapshot copies the volume into a snapshot named as the request names it,
// ready at once; asked again, it answers with the same snapshot.
func (d *driver) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if req.GetName() == "" || req.GetSourceVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "no name or source volume")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	id := req.GetName()
	if _, err := os.Stat(d.snapshot(id)); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(d.volume(req.GetSourceVolumeId())); err != nil {
			return nil, status.Errorf(codes.NotFound, "volume %s: %v", req.GetSourceVolumeId(), err)
		}
		if err := copyDir(d.volume(req.GetSourceVolumeId()), d.snapshot(id)); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		if err := os.WriteFile(d.snapshot(id)+".source", []byte(req.GetSourceVolumeId()), 0o644); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	snap, err := d.describe(id)
	if err != nil {
		return nil, err
	}
	return &csi.CreateSnapshotResponse{Snapshot: snap}, nil
}

// describe is snapshot id as CSI describes one.
func (d *driver) describe(id string) (*csi.Snapshot, error) {
	info, err := os.Stat(d.snapshot(id))
	if err != nil {
		return nil, status.Errorf(codes.NotFound, "snapshot %s: %v", id, err)
	}
	source, _ := os.ReadFile(d.snapshot(id) + ".source")
	return &csi.Snapshot{SnapshotId: id, SourceVolumeId: string(source), CreationTime: timestamppb.New(info.ModTime()),
		ReadyToUse: true, SizeBytes: 1 << 30}, nil
}

func (d *driver) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	os.Remove(d.snapshot(req.GetSnapshotId()) + ".source")
	return &csi.DeleteSnapshotResponse{}, os.RemoveAll(d.snapshot(req.GetSnapshotId()))
}

// ListSnapshots lists one snapshot by its ID, the snapshots of a volume, or all.
func (d *driver) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ids []string
	if id := req.GetSnapshotId(); id != "" {
		ids = []string{id}
	} else {
		entries, err := os.ReadDir(filepath.Join(d.root, "snapshots"))
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		for _, e := range entries {
			if e.IsDir() {
				ids = append(ids, e.Name())
			}
		}
	}
	resp := &csi.ListSnapshotsResponse{}
	for _, id := range ids {
		snap, err := d.describe(id)
		if err != nil {
			continue // a snapshot by ID that is not there: none listed, as CSI asks
		}
		if v := req.GetSourceVolumeId(); v != "" && snap.SourceVolumeId != v {
			continue
		}
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: snap})
	}
	return resp, nil
}

// copyDir copies the regular files and directories under from into to, which it makes.
func copyDir(from, to string) error {
	return filepath.WalkDir(from, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		switch {
		case e.IsDir():
			return os.MkdirAll(dst, 0o755)
		case e.Type().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, data, 0o644)
		}
		return fmt.Errorf("%s: not a file or directory", path)
	})
}
