package restore

import (
	"context"

	"github.com/restoregraph/restoregraph/hook"
	"github.com/restoregraph/restoregraph/versionselect"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Target is the cluster a restore writes to, as the clients it is reached through. Tests
// and embedders may pass their own (a fake dynamic client, a cached discovery).
type Target struct {
	// Dynamic creates, reads and watches objects. Through the one NewTarget makes, a
	// create sends the object's JSON as it is and decodes of the server's answer only
	// what the restore reads (see Object.Target).
	Dynamic dynamic.Interface
	// Discovery tells which group-versions and resources the target serves; it is read
	// once, when the restore is planned.
	Discovery versionselect.Discovery
	// Mapper finds owners that are not in the backup, by kind; nil drops such owners
	// with a warning.
	Mapper meta.RESTMapper
	// Exec runs Pods' exec hooks; nil fails each Pod that has one, saying so.
	Exec hook.Executor
	// Creator, when set, creates the objects instead of Dynamic: a server in this process
	// (memcluster's Server) is handed each object as the steps left it, with nothing
	// encoded or decoded on either side. Everything else still goes through Dynamic.
	Creator Creator
}

// Creator creates an object in a server in this process from its decoded form, as a
// POST of its JSON would: the same checks and defaults, the server's Status as an
// apierrors error. It may change obj's top level and metadata, and on success obj is
// the object as created; what lies deeper it must replace where it changes it, not
// change, for the restore shares those values with the object as the backup holds it.
// It keeps nothing of obj once Create returns: the restore gives obj's maps to the
// objects decoded after it, once the object is restored.
//
// A Creator with a method TakesRawJSON() bool that returns true is also given, as
// values of the top level of objects no step reads below their metadata, the JSON the
// restore did not decode: values whose MarshalJSON returns it (memcluster's Server
// stores it as it is). Those bytes are the body the restore read, in a buffer it uses
// again for another object's once this one is restored: they are not to be changed,
// nor kept.
type Creator interface {
	Create(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj map[string]any) error
}

// NewTarget returns the target reached through cfg: a dynamic client, discovery, and a RESTMapper over cached discovery that refreshes
// itself when a kind is not found (CRDs restored by this very restore).
func NewTarget(cfg *rest.Config) (Target, error) {
	// As dynamic.NewForConfig makes its client, keeping the REST client: one client, one
	// rate limiter.
	dcfg := dynamic.ConfigFor(cfg)
	dcfg.GroupVersion = nil
	dcfg.APIPath = "/if-you-see-this-search-for-the-break"
	rc, err := rest.UnversionedRESTClientFor(dcfg)
	if err != nil {
		return Target{}, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return Target{}, err
	}
	return Target{
		Dynamic:   &restDynamic{DynamicClient: dynamic.New(rc), rest: rc},
		Discovery: disc,
		Mapper:    restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		Exec:      hook.Remote{Config: rest.CopyConfig(cfg)},
	}, nil
}

// restDynamic is the dynamic client NewTarget makes, with the REST client under it,
// which creates go through (createBody). A Dynamic that wraps it, as tests and
// embedders do to change what it does, is used as it is.
type restDynamic struct {
	*dynamic.DynamicClient
	rest rest.Interface
}
