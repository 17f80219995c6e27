package restore

import (
	"github.com/restoregraph/restoregraph/hook"
	"github.com/restoregraph/restoregraph/versionselect"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Target is the cluster a restore writes to, as the clients it is reached through. Tests
// and embedders may pass their own (a fake dynamic client, a cached discovery).
type Target struct {
	// Dynamic creates, reads and watches objects.
	Dynamic dynamic.Interface
	// Discovery tells which group-versions and resources the target serves; it is read
	// once, when the restore is planned.
	Discovery versionselect.Discovery
	// Mapper finds owners that are not in the backup, by kind; nil drops such owners
	// with a warning.
	Mapper meta.RESTMapper
	// Exec runs Pods' exec hooks; nil fails each Pod that has one, saying so.
	Exec hook.Executor
}

// NewTarget returns the target reached through cfg: a dynamic client, discovery, and a
// RESTMapper over cached discovery that refreshes itself when a kind is not found (CRDs
// restored by this very restore).
func NewTarget(cfg *rest.Config) (Target, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return Target{}, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return Target{}, err
	}
	return Target{
		Dynamic:   dyn,
		Discovery: disc,
		Mapper:    restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		Exec:      hook.Remote{Config: rest.CopyConfig(cfg)},
	}, nil
}
