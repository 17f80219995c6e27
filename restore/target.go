package restore

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/restoregraph/restoregraph/hook"
	"github.com/restoregraph/restoregraph/internal/direct"
	"github.com/restoregraph/restoregraph/versionselect"
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

	// creator, when set, creates the objects instead of Dynamic: NewTarget sets it for
	// a configuration whose transport is a server in this process that creates objects
	// directly (memcluster's InProcessConfig), which is then handed each object as the
	// steps left it, with nothing encoded or decoded on either side. Everything else
	// still goes through Dynamic.
	creator direct.Creator
}

// NewTarget returns the target reached through cfg: a dynamic client, discovery, and a
// RESTMapper over cached discovery that refreshes itself when a kind is not found (CRDs
// restored by this very restore). For the configuration of an embedded server in this
// process (memcluster.Server.InProcessConfig), objects are created by handing them to
// the server as they are, with nothing encoded or decoded.
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
	t := Target{
		Dynamic:   &restDynamic{DynamicClient: dynamic.New(rc), rest: rc},
		Discovery: disc,
		Mapper:    restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		Exec:      hook.Remote{Config: rest.CopyConfig(cfg)},
	}
	if d, ok := cfg.Transport.(direct.Transport); ok {
		t.creator = d.DirectCreator()
	}
	return t, nil
}

// restDynamic is the dynamic client NewTarget makes, with the REST client under it,
// which creates go through (createBody). A Dynamic that wraps it, as tests and
// embedders do to change what it does, is used as it is.
type restDynamic struct {
	*dynamic.DynamicClient
	rest rest.Interface
}
