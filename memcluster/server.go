package memcluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"

	"github.com/restoregraph/restoregraph/internal/keyed"
)

// Options tune a memcluster. The zero value is a plain, fault-free server.
type Options struct {
	// EstablishDelay is how long a new CRD takes to be served and Established.
	EstablishDelay time.Duration
	// GC turns on garbage collection of objects whose owners are all gone, after GCDelay
	// (default 100ms) of being orphaned.
	GC      bool
	GCDelay time.Duration
	// BindVolumes binds claims and volumes that name each other (a claim's
	// spec.volumeName, a volume's spec.claimRef), as kube-controller-manager's
	// persistentvolume-binder binds pre-bound ones; nothing is provisioned.
	BindVolumes bool
	// Latency, when set, is slept before every resource request is served.
	Latency func() time.Duration
	// Faults, when set, answers a share of resource requests with an error.
	Faults *Faults
	// History is how many changes are kept for watches that resume from a
	// resourceVersion; default 10000. An older version gets 410 Gone.
	History int
	// ServiceCIDR is the range Services' cluster IPs come from, as kube-apiserver's
	// --service-cluster-ip-range; default 10.0.0.0/24. An IP outside it is refused. As
	// kube-apiserver's, it has at most 20 bits of host (a /12 of IPv4, a /108 of IPv6).
	ServiceCIDR string
	// DataDir, when set, is where the store keeps its objects' JSON: in one file it
	// makes there and removes from the directory at once, which its open descriptor
	// keeps until Close. Each object's record in memory then holds its name, UID and the
	// fields the server reads, and the JSON lies in the kernel's page cache, which it
	// gives back under pressure once written, not in the Go heap. On a disk the JSON is
	// kept as it is; on tmpfs or ramfs, whose pages are memory the kernel cannot give
	// back, compressed as in memory (about a seventh of its size). The file only grows: a replaced or deleted object's JSON is not reused.
	// When the file refuses a write (a full disk), that object and those after it are
	// kept in memory: nothing is lost, and DataFileError says why.
	DataDir string
	// dataFlush is the data file's flush (tests write each object at once).
	dataFlush int
}

// Server is a running memcluster.
type Server struct {
	opts     Options
	listener net.Listener
	http     *http.Server
	cfg      *rest.Config

	mu          sync.Mutex
	types       map[schema.GroupResource]*resourceType
	objects     objectIndex
	byUID       *keyed.Map[types.UID, *stored]
	canon       canonSet // the label sets and apiVersions of objects stored lately
	now         stamp    // a created object's creationTimestamp
	rv          uint64
	history     ring
	watchers    map[*watcher]struct{}
	orphanSince map[key]time.Time         // the garbage collector's candidates
	dependents  map[types.UID][]types.UID // by owner UID, the objects that named it (some may since have stopped)
	// claimsFor are the claims that name a volume not yet there, by its name (BindVolumes).
	claimsFor map[string]key
	timers    map[*time.Timer]struct{}
	closed    bool
	collected int
	alloc     *allocations
	file      *dataFile // the objects' JSON (Options.DataDir), or nil

	done  chan struct{}  // closed by Close: ends watches and background work
	tasks sync.WaitGroup // background work: GC, namespace cleanup, CRD establishment

	// Handlers in flight, so that Close can wait for them after closing every connection.
	hmu      sync.Mutex
	closing  bool
	handlers sync.WaitGroup
	pipes    map[*io.PipeWriter]struct{} // the watches served in process (InProcessConfig)
}

// Start starts a memcluster on a loopback port and returns the client configuration
// and the function that stops it.
func Start(opts Options) (*rest.Config, func(), error) {
	s, err := StartServer(opts)
	if err != nil {
		return nil, nil, err
	}
	return s.Config(), s.Close, nil
}

// StartServer starts a memcluster and returns it, for callers that inspect it.
func StartServer(opts Options) (*Server, error) {
	if opts.History <= 0 {
		opts.History = 10_000
	}
	if opts.GCDelay <= 0 {
		opts.GCDelay = 100 * time.Millisecond
	}
	if opts.ServiceCIDR == "" {
		opts.ServiceCIDR = "10.0.0.0/24"
	}
	alloc, err := newAllocations(opts.ServiceCIDR)
	if err != nil {
		return nil, err
	}
	var file *dataFile
	if opts.DataDir != "" {
		if file, err = openDataFile(opts.DataDir, opts.dataFlush); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		if file != nil {
			file.close()
		}
		return nil, fmt.Errorf("memcluster: listen: %w", err)
	}
	s := &Server{
		opts: opts, listener: ln, alloc: alloc, file: file,
		types: map[schema.GroupResource]*resourceType{}, objects: objectIndex{}, byUID: keyed.New(0, (*stored).uid),
		history: newRing(opts.History), watchers: map[*watcher]struct{}{},
		orphanSince: map[key]time.Time{}, dependents: map[types.UID][]types.UID{}, claimsFor: map[string]key{}, timers: map[*time.Timer]struct{}{}, done: make(chan struct{}),
	}
	for _, rt := range builtins() {
		s.addType(rt)
	}
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.cfg = &rest.Config{
		Host:          "http://" + ln.Addr().String(),
		QPS:           -1, // no client-side throttling: callers that want it set their own
		ContentConfig: rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"},
	}
	s.tasks.Add(1)
	go func() {
		defer s.tasks.Done()
		s.http.Serve(ln) // returns http.ErrServerClosed once Close shuts it down

	}()
	if opts.GC {
		s.tasks.Add(1)
		go s.collectGarbage()
	}
	return s, nil
}

// Config returns a client configuration for the server. Each call returns a new copy.
func (s *Server) Config() *rest.Config { return rest.CopyConfig(s.cfg) }

// Close stops the server, ends every watch and background task, and returns once they
// have all returned.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for t := range s.timers {
		if t.Stop() {
			s.tasks.Done()
		}
	}
	close(s.done)
	s.mu.Unlock()
	s.hmu.Lock()
	s.closing = true
	for pw := range s.pipes {
		pw.CloseWithError(http.ErrServerClosed) // a watch's write that waits for its reader returns
	}
	s.hmu.Unlock()
	// Close, not Shutdown: Shutdown waits five seconds for connections a client opened
	// and never used. Handlers see done, or their connection closed, and return.
	s.http.Close()
	s.handlers.Wait()
	s.tasks.Wait()
	if s.file != nil {
		s.file.close() // a file removed from its directory: nothing to report
	}
}

// addType serves rt, whose objects' JSON goes to the data file when there is one. The
// caller holds s.mu, or the server is not started.
func (s *Server) addType(rt *resourceType) {
	if s.file != nil {
		rt.codec.useFile(s.file)
	}
	rt.boxed()
	s.types[rt.gr] = rt
}

// DataFileError returns the first write the data file (Options.DataDir) refused, or
// nil. From that object on, the store keeps the objects' JSON in memory.
func (s *Server) DataFileError() error {
	if s.file == nil {
		return nil
	}
	return s.file.err()
}

// enter counts a request in, for Close to wait for it; the caller calls
// s.handlers.Done when it is served. Once the server is stopping, it refuses it.
func (s *Server) enter() error {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	if s.closing {
		return apierrors.NewServiceUnavailable("memcluster is stopping")
	}
	s.handlers.Add(1)
	return nil
}

// ServeHTTP routes a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := s.enter(); err != nil {
		writeStatus(w, err)
		return
	}
	defer s.handlers.Done()
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/version":
		writeJSON(w, http.StatusOK, version.Info{Major: "1", Minor: "37", GitVersion: "v1.37.0-memcluster"})
	case r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/livez":
		w.Write([]byte("ok"))
	case len(segs) == 1 && segs[0] == "api":
		writeJSON(w, http.StatusOK, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
	case len(segs) == 1 && segs[0] == "apis":
		s.mu.Lock()
		list := s.apiGroupList()
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, list)
	case len(segs) == 2 && segs[0] == "apis":
		s.mu.Lock()
		g := s.apiGroup(segs[1])
		s.mu.Unlock()
		if g == nil {
			writeStatus(w, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
			return
		}
		writeJSON(w, http.StatusOK, g)
	case len(segs) == 2 && segs[0] == "api" || len(segs) == 3 && segs[0] == "apis":
		group, ver := "", segs[1]
		if segs[0] == "apis" {
			group, ver = segs[1], segs[2]
		}
		s.mu.Lock()
		list := s.resourceList(group, ver)
		s.mu.Unlock()
		if list == nil {
			writeStatus(w, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
			return
		}
		writeJSON(w, http.StatusOK, list)
	default:
		s.serveResource(w, r, segs)
	}
}

// request is a parsed resource request.
type request struct {
	rt          *resourceType
	version     string
	namespace   string
	name        string
	subresource string
}

// parse reads /api/v1/... or /apis/<group>/<version>/... The caller holds s.mu.
func (s *Server) parse(segs []string) (*request, error) {
	var group, ver string
	switch {
	case len(segs) >= 3 && segs[0] == "api":
		ver, segs = segs[1], segs[2:]
	case len(segs) >= 4 && segs[0] == "apis":
		group, ver, segs = segs[1], segs[2], segs[3:]
	default:
		return nil, apierrors.NewNotFound(schema.GroupResource{}, strings.Join(segs, "/"))
	}
	req := &request{version: ver}
	// namespaces/<ns>/<resource>/... unless <resource> is not a namespaced resource, in
	// which case it is a subresource of the Namespace itself (namespaces/<ns>/status).
	if len(segs) >= 3 && segs[0] == "namespaces" {
		if rt, ok := s.types[schema.GroupResource{Group: group, Resource: segs[2]}]; ok && rt.namespaced {
			req.namespace, segs = segs[1], segs[2:]
		}
	}
	gr := schema.GroupResource{Group: group, Resource: segs[0]}
	rt, ok := s.types[gr]
	if !ok || !rt.serves(ver) {
		return nil, apierrors.NewNotFound(gr, "")
	}
	req.rt = rt
	if len(segs) > 1 {
		req.name = segs[1]
	}
	if len(segs) > 2 {
		req.subresource = segs[2]
	}
	if len(segs) > 3 || (req.subresource != "" && (req.subresource != "status" || !rt.status)) {
		return nil, apierrors.NewNotFound(gr, req.name)
	}
	if req.namespace != "" && !rt.namespaced {
		return nil, apierrors.NewNotFound(gr, req.name)
	}
	return req, nil
}

func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, segs []string) {
	if s.opts.Latency != nil {
		select {
		case <-time.After(s.opts.Latency()):
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
	}
	if s.opts.Faults != nil && r.URL.Query().Get("watch") != "true" &&
		s.opts.Faults.inject(w, r, s.done, func(w http.ResponseWriter) { s.serveParsed(w, r, segs) }) {
		return
	}
	s.serveParsed(w, r, segs)
}

func (s *Server) serveParsed(w http.ResponseWriter, r *http.Request, segs []string) {
	s.mu.Lock()
	req, err := s.parse(segs)
	s.mu.Unlock()
	if err != nil {
		writeStatus(w, err)
		return
	}
	q := r.URL.Query()
	if verb := requestVerb(r.Method, req, q.Get("watch") == "true"); req.subresource == "" && verb != "" && !req.rt.verbAllowed(verb) {
		writeStatus(w, apierrors.NewMethodNotSupported(req.rt.gr, verb))
		return
	}
	switch {
	case r.Method == http.MethodGet && req.name == "" && q.Get("watch") == "true":
		s.watch(w, r, req)
	case r.Method == http.MethodGet && req.name == "":
		s.listHandler(w, r, req)
	case r.Method == http.MethodGet:
		s.get(w, req)
	case r.Method == http.MethodPost && req.name == "":
		s.create(w, r, req)
	case r.Method == http.MethodPut && req.name != "":
		s.update(w, r, req)
	case r.Method == http.MethodPatch && req.name != "":
		s.patch(w, r, req)
	case r.Method == http.MethodDelete && req.name != "":
		s.deleteHandler(w, r, req)
	default:
		writeStatus(w, apierrors.NewMethodNotSupported(req.rt.gr, r.Method))
	}
}

// requestVerb is the Kubernetes verb of a request, as discovery names verbs.
func requestVerb(method string, req *request, watching bool) string {
	switch {
	case method == http.MethodGet && req.name == "" && watching:
		return "watch"
	case method == http.MethodGet && req.name == "":
		return "list"
	case method == http.MethodGet:
		return "get"
	case method == http.MethodPost:
		return "create"
	case method == http.MethodPut:
		return "update"
	case method == http.MethodPatch:
		return "patch"
	case method == http.MethodDelete && req.name == "":
		return "deletecollection"
	case method == http.MethodDelete:
		return "delete"
	}
	return ""
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// writeRaw writes an object's JSON as it is stored.
func writeRaw(w http.ResponseWriter, code int, raw []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(raw)
}

// writeStatus writes err as a Kubernetes Status.
func writeStatus(w http.ResponseWriter, err error) {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		se = apierrors.NewInternalError(err)
	}
	st := se.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	st.Status = metav1.StatusFailure
	writeJSON(w, int(st.Code), &st)
}
