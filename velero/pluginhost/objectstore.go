package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"

	proto "github.com/vmware-tanzu/velero/pkg/plugin/generated"
)

// KindObjectStore is Velero's object-store plugin kind: what a BackupStorageLocation's
// provider names, and what reads and writes the location's bucket.
const KindObjectStore = "ObjectStore"

// ErrNoObjectStore is returned when no executable given serves the object store a
// location names.
var ErrNoObjectStore = errors.New("no plugin serves the object store")

// ProviderPlugin is the plugin name of a location's provider (a backup storage
// location's object store, a volume snapshot location's VolumeSnapshotter), as Velero
// resolves it: a provider without a namespace ("aws") is one of Velero's own
// ("velero.io/aws").
func ProviderPlugin(provider string) string {
	if !strings.Contains(provider, "/") {
		return "velero.io/" + provider
	}
	return provider
}

// ObjectStore is one bucket seen through an object-store plugin, run out of process as
// Velero runs it and initialized with the location's config: an archive.Source, so
// that a backup is read from any store Velero supports with no provider code here.
//
// Velero's protocol has no ranged read: a read resumed after a break asks for the object
// again and skips what was already read, so the bytes before the break travel twice
// (they are not read or parsed twice).
type ObjectStore struct {
	p      *process
	name   string
	bucket string
	config map[string]string

	mu          sync.Mutex
	initialized int // the process start the plugin was initialized in
}

// ObjectStore finds the executable among commands that serves the object store name
// (ProviderPlugin of a location's provider) and returns it for bucket, initialized
// with config as Velero initializes it (the location's config with bucket, prefix and,
// when the location names a credential, credentialsFile). The plugin is initialized
// again whenever its process is started again.
func (h *Host) ObjectStore(ctx context.Context, name, bucket string, config map[string]string, commands ...[]string) (*ObjectStore, error) {
	p, err := h.serving(ctx, KindObjectStore, name, ErrNoObjectStore, commands)
	if err != nil {
		return nil, err
	}
	o := &ObjectStore{p: p, name: name, bucket: bucket, config: config}
	_, call, err := o.client(ctx)
	if err != nil {
		return nil, err
	}
	return o, call.end(ctx, nil)
}

// serving returns the process of the executable among commands that serves the plugin
// name of kind; none is notServed, with the names of kind the commands serve.
func (h *Host) serving(ctx context.Context, kind, name string, notServed error, commands [][]string) (*process, error) {
	var served []string
	for _, c := range commands {
		p, ids, err := h.list(ctx, c)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if id.Kind != kind {
				continue
			}
			if id.Name == name {
				return p, nil
			}
			served = append(served, id.Name)
		}
	}
	slices.Sort(served)
	what := "none"
	if len(served) > 0 {
		what = strings.Join(served, ", ")
	}
	return nil, fmt.Errorf("%w %s: the plugins given serve %s", notServed, name, what)
}

// client begins a call on the plugin's client, initialized in the running process; the
// caller ends the call.
func (o *ObjectStore) client(ctx context.Context) (proto.ObjectStoreClient, *call, error) {
	call, err := o.p.begin(KindObjectStore)
	if err != nil {
		return nil, nil, err
	}
	c := proto.NewObjectStoreClient(call.conn)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.initialized != call.inst.start {
		_, err := c.Init(ctx, &proto.ObjectStoreInitRequest{Plugin: o.name, Config: o.config})
		if err != nil {
			return nil, nil, fmt.Errorf("object store %s: Init: %w", o.name, call.end(ctx, err))
		}
		o.initialized = call.inst.start
	}
	return c, call, nil
}

// Exists says whether the bucket holds key.
func (o *ObjectStore) Exists(ctx context.Context, key string) (bool, error) {
	c, call, err := o.client(ctx)
	if err != nil {
		return false, err
	}
	resp, err := c.ObjectExists(ctx, &proto.ObjectExistsRequest{Plugin: o.name, Bucket: o.bucket, Key: key})
	if err := call.end(ctx, err); err != nil {
		return false, fmt.Errorf("object store %s: %s: %w", o.name, key, err)
	}
	return resp.Exists, nil
}

// Open reads key from offset on (archive.Source). A key the bucket does not hold is
// fs.ErrNotExist.
func (o *ObjectStore) Open(ctx context.Context, key string, offset int64) (io.ReadCloser, error) {
	if offset == 0 {
		// The protocol's GetObject tells a missing key only as the stream's error text:
		// ask first, so that a missing backup is told from a broken read.
		ok, err := o.Exists(ctx, key)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%s in bucket %s: %w", key, o.bucket, fs.ErrNotExist)
		}
	}
	c, call, err := o.client(ctx)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	stream, err := c.GetObject(sctx, &proto.GetObjectRequest{Plugin: o.name, Bucket: o.bucket, Key: key})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("object store %s: %s: %w", o.name, key, call.end(ctx, err))
	}
	r := &streamReader{recv: stream.Recv, cancel: cancel, o: o, ctx: ctx, call: call}
	if offset > 0 {
		if _, err := io.CopyN(io.Discard, r, offset); err != nil {
			r.Close()
			return nil, fmt.Errorf("object store %s: %s: skipping to byte %d: %w", o.name, key, offset, err)
		}
	}
	return r, nil
}

// List returns the keys of the bucket under prefix (ListObjects).
func (o *ObjectStore) List(ctx context.Context, prefix string) ([]string, error) {
	c, call, err := o.client(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := c.ListObjects(ctx, &proto.ListObjectsRequest{Plugin: o.name, Bucket: o.bucket, Prefix: prefix})
	if err := call.end(ctx, err); err != nil {
		return nil, fmt.Errorf("object store %s: listing %s: %w", o.name, prefix, err)
	}
	return resp.Keys, nil
}

// Delete removes key from the bucket (DeleteObject).
func (o *ObjectStore) Delete(ctx context.Context, key string) error {
	c, call, err := o.client(ctx)
	if err != nil {
		return err
	}
	_, err = c.DeleteObject(ctx, &proto.DeleteObjectRequest{Plugin: o.name, Bucket: o.bucket, Key: key})
	if err := call.end(ctx, err); err != nil {
		return fmt.Errorf("object store %s: deleting %s: %w", o.name, key, err)
	}
	return nil
}

// putChunk is how much of a body one PutObject message carries: well under gRPC's
// 4 MiB message limit, and few messages for a large tarball.
const putChunk = 1 << 20

// Put writes body to key (PutObject), streamed to the plugin in chunks; the plugin
// uploads as its provider does (Velero's AWS plugin in parts). At least one message is
// sent, for an empty body too: the plugin reads the bucket and key from the first. A
// body that fails to read ends the stream with an error, so that the plugin drops what
// it had instead of storing a part as the whole.
func (o *ObjectStore) Put(ctx context.Context, key string, body io.Reader) error {
	c, call, err := o.client(ctx)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.PutObject(sctx)
	if err != nil {
		return fmt.Errorf("object store %s: %s: %w", o.name, key, call.end(ctx, err))
	}
	buf := make([]byte, putChunk)
	for sent := false; ; sent = true {
		n, rerr := io.ReadFull(body, buf)
		if rerr != nil && rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
			cancel()
			call.end(ctx, nil)
			return fmt.Errorf("object store %s: %s: reading what to write: %w", o.name, key, rerr)
		}
		if n > 0 || !sent {
			if err := stream.Send(&proto.PutObjectRequest{Plugin: o.name, Bucket: o.bucket, Key: key, Body: buf[:n]}); err != nil {
				break // the plugin's own error comes with CloseAndRecv
			}
		}
		if rerr != nil {
			break
		}
	}
	_, err = stream.CloseAndRecv()
	if err := call.end(ctx, err); err != nil {
		return fmt.Errorf("object store %s: writing %s: %w", o.name, key, err)
	}
	return nil
}

// streamReader reads GetObject's stream of chunks; the call ends with the stream, or
// when the reader is closed.
type streamReader struct {
	recv   func() (*proto.Bytes, error)
	cancel context.CancelFunc
	o      *ObjectStore
	ctx    context.Context
	call   *call // nil once ended
	err    error // what every Read returns once the call has ended
	buf    []byte
}

func (r *streamReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.call == nil {
			return 0, r.err
		}
		chunk, err := r.recv()
		if err == io.EOF {
			r.end(nil, io.EOF)
			return 0, io.EOF
		}
		if err != nil {
			r.end(err, nil)
			return 0, r.err
		}
		r.buf = chunk.Data
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// end ends the call with the stream's error, or with then for the reads after it.
func (r *streamReader) end(err, then error) {
	if r.call == nil {
		return
	}
	if err = r.call.end(r.ctx, err); err != nil {
		then = fmt.Errorf("object store %s: %w", r.o.name, err)
	}
	r.call, r.err = nil, then
}

func (r *streamReader) Close() error {
	r.cancel()
	r.end(nil, os.ErrClosed)
	return nil
}
