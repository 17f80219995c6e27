// Package memcluster is a small in-process Kubernetes API server: the default target of
// a restore when no kubeconfig is given, and the cluster of every test and benchmark
// that does not need a real one.
//
// It speaks the Kubernetes REST API over HTTP on a loopback port, so client-go (dynamic
// client, discovery, RESTMapper, typed clientsets over JSON) talks to it unchanged
// through the *rest.Config that Start returns. It behaves like a real API server where
// restore order matters:
//
//   - Discovery (/api, /apis, group and group-version resource lists), versions of a
//     group ranked the Kubernetes way, the preferred version first.
//   - Create, get, list, update, patch (JSON merge patch and JSON patch), delete and
//     watch, for namespaced and cluster-scoped resources, with Kubernetes status errors:
//     NotFound, AlreadyExists, Conflict on a stale resourceVersion, Invalid, and NotFound
//     for a resource that is not served.
//   - Lists in pages (limit and continue), and watches that resume from a
//     resourceVersion, while the changes since it are kept (Options.History); past that,
//     a continue token or a watch gets 410 Gone, as from a compacted etcd. A continued
//     list shows objects as they are now, not as they were at the token's version.
//   - Services get a cluster IP from Options.ServiceCIDR; one outside it is refused.
//   - Server-set metadata: uid, resourceVersion (one monotonic counter), creationTimestamp,
//     generation (bumped when anything but metadata and status changes).
//   - A namespaced object can be created only in an existing Namespace that is not
//     terminating. Deleting a Namespace makes it Terminating, deletes what it holds, then
//     removes it.
//   - CustomResourceDefinitions: a created CRD serves its served versions after
//     Options.EstablishDelay, then has Established and NamesAccepted; until then its
//     resources answer NotFound. A custom resource is stored once and served at every
//     served version (apiVersion rewritten; no schema conversion).
//   - Status subresources, for the built-in kinds that have one and for CRDs that ask:
//     create and updates of the main resource keep the stored status; /status updates
//     only status.
//   - Optional garbage collection (Options.GC): an object whose ownerReferences all name
//     UIDs that do not exist is deleted after Options.GCDelay, as kube-controller-manager
//     does.
//   - Injected latency and faults (Options.Latency, Options.Faults) for benchmarks and
//     resilience tests.
//   - Creates from a client in the same process that holds its objects decoded
//     (Server.Create, which restore.NewTarget finds behind InProcessConfig): what a POST of the
//     object's JSON would do, without the JSON.
//
// Known differences from a real API server: no strategic merge patch or server-side
// apply (415), no validation against OpenAPI schemas, no admission, no authentication,
// no protobuf, no field selectors beyond metadata.name and metadata.namespace.
//
// The store keeps each object as its JSON, with the few metadata fields the server reads
// (name, namespace, UID, resourceVersion, labels, owners, deletion) parsed beside it, and
// a read at the version an object was written at serves those bytes: the Go collector
// has a few allocations per object to walk, not a tree of maps. The JSON is kept without
// the strings the record holds beside it (its name, namespace, UID and resourceVersion,
// and its owners' UIDs), which are put back as it is read; a created object's is encoded
// before the store's lock is taken, which gives its resourceVersion, and compressed with
// s2 against a dictionary of its resource's first objects, each object its own block. Objects are kept by resource, namespace and name:
// a list reads its resource's objects only. Garbage collection works from changes,
// never by scanning the store.
//
// Start listens only on 127.0.0.1; Server.Close ends every watch and background task
// and returns once no goroutine of the server is left.
package memcluster
