package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero"
	"github.com/restoregraph/restoregraph/velero/pluginhost"
)

// Config is what a Controller is built from. Velero, Kubernetes, Target and Plugins are
// required; every other field has a default.
type Config struct {
	// Velero reaches Velero's namespace: its Restores, Backups, locations and their
	// Secrets.
	Velero velero.Client
	// Kubernetes is a client of the same cluster: the Restores' Leases, their Events,
	// and the ConfigMaps of resource modifiers and version priorities.
	Kubernetes kubernetes.Interface
	// Target is where the Restores restore to, usually the cluster Velero runs in.
	Target restore.Target
	// Plugins runs Velero's plugins; PluginCommands are their executables: the object
	// stores of the backups' locations, and RestoreItemActions.
	Plugins        *pluginhost.Host
	PluginCommands [][]string
	// Admitter admits each Restore against other operations on the cluster. Default:
	// admission.Cluster in AdmissionNamespace, whose Leases expire with LeaseDuration,
	// so that a dead process's admission goes with its Restores' Leases.
	Admitter           admission.Admitter
	AdmissionNamespace string // default "restoregraph-admission"
	// Identity names this process in the Restores' Leases, their Events and the
	// restoregraph.dev/taken-by annotation; default HOSTNAME-PID (a Pod's name).
	Identity string
	// Restores is how many Restores this process carries out at once; default 4.
	Restores int
	// LeaseDuration is how long a Restore's Lease holds without renewal: how soon
	// another process takes over the Restore of one that died. Default 15s, at least 3s.
	LeaseDuration time.Duration
	// Run are the options of every restore (ItemTimeout, Workers, ...). Its Name,
	// Logger, Journal, Admitter, OnEvent and ItemOperationTimeout are set per Restore.
	Run restore.RunOptions
	// Guard is what the controller refuses of a Restore beyond what Velero checks:
	// namespace mappings onto protected namespaces, resource modifiers that rewrite RBAC,
	// backups of locations it does not list.
	Guard Guard
	// AsRequester, when set, has each Restore carried out with the rights of the user
	// who created it: it returns the target as that user (rest.Config's Impersonate).
	// Who created a Restore is read from what RequesterPolicy recorded on it; a Restore
	// without that record, or whose creator may not write what it restores (asked of the
	// API server as them before anything is written), fails validation, named. The
	// controller's own reads and Velero's plugins keep the controller's rights.
	AsRequester func(Requester) (restore.Target, error)
	// Logger receives the controller's records; default none.
	Logger *slog.Logger
	// Metrics is told what the controller does; default nothing is told.
	Metrics Metrics
	// Events records Events on the Restores; default a recorder that writes them to
	// Velero's namespace as component restoregraph.
	Events record.EventRecorder
}

// Controller carries out Velero's Restore objects. Build one with New.
type Controller struct {
	velero   velero.Client
	clients  kubernetes.Interface
	target   restore.Target
	host     *pluginhost.Host
	commands [][]string
	admitter admission.Admitter
	run      restore.RunOptions
	guard    Guard
	// asRequester makes a Restore's target as its creator; nil: the controller's own.
	asRequester func(Requester) (restore.Target, error)
	log         *slog.Logger
	identity    string
	// leaseDuration is how long a Restore's Lease holds without renewal.
	leaseDuration time.Duration
	slots         chan struct{} // a place per Restore carried out at once
	metrics       Metrics
	events        record.EventRecorder // nil until Run when the Config gave none

	ready atomic.Bool // the informer has listed the Restores
	// restores is the informer's store of the Restores.
	restores cache.Store

	queue     workqueue.TypedRateLimitingInterface[string]
	mu        sync.Mutex
	electing  map[string]*election
	elections sync.WaitGroup
}

// New checks cfg and returns the Controller it makes.
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.Velero.Dynamic == nil || cfg.Velero.Secrets == nil:
		return nil, errors.New("controller: Config.Velero needs its Dynamic and Secrets clients")
	case cfg.Kubernetes == nil:
		return nil, errors.New("controller: Config.Kubernetes is required")
	case cfg.Target.Dynamic == nil:
		return nil, errors.New("controller: Config.Target is required")
	case cfg.Plugins == nil || len(cfg.PluginCommands) == 0:
		return nil, errors.New("controller: Config.Plugins and PluginCommands are required: the object stores of the backups' locations are plugins")
	case cfg.Restores < 0:
		return nil, fmt.Errorf("controller: Config.Restores %d: at least 1", cfg.Restores)
	case cfg.LeaseDuration != 0 && cfg.LeaseDuration < 3*time.Second:
		return nil, fmt.Errorf("controller: Config.LeaseDuration %s: at least 3s, for the Lease is renewed within two thirds of it", cfg.LeaseDuration)
	}
	if cfg.Velero.Namespace == "" {
		cfg.Velero.Namespace = "velero"
	}
	if cfg.Identity == "" {
		host, _ := os.Hostname()
		cfg.Identity = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if cfg.Restores == 0 {
		cfg.Restores = 4
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = 15 * time.Second
	}
	if cfg.AdmissionNamespace == "" {
		cfg.AdmissionNamespace = "restoregraph-admission"
	}
	if cfg.Admitter == nil {
		cfg.Admitter = &admission.Cluster{Client: cfg.Kubernetes, Namespace: cfg.AdmissionNamespace, Holder: cfg.Identity, LeaseDuration: cfg.LeaseDuration}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	return &Controller{velero: cfg.Velero, clients: cfg.Kubernetes, target: cfg.Target, host: cfg.Plugins, commands: cfg.PluginCommands,
		admitter: cfg.Admitter, run: cfg.Run, guard: cfg.Guard, asRequester: cfg.AsRequester, log: cfg.Logger, identity: cfg.Identity, leaseDuration: cfg.LeaseDuration,
		slots: make(chan struct{}, cfg.Restores), metrics: cfg.Metrics, events: cfg.Events, electing: map[string]*election{}}, nil
}

// Ready reports whether the controller has listed the Restores and works from them: a
// readiness probe's answer.
func (c *Controller) Ready() bool { return c.ready.Load() }

// Electing is how many unfinished Restores this process stands for: the queue's depth,
// across the replicas.
func (c *Controller) Electing() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.electing)
}

// Run watches the Restores of Velero's namespace through an informer and hands each
// that is not finished to an election of its own, from a rate-limited work queue, until
// ctx is done. It returns once every goroutine it started has returned and every Lease
// it held is released; its error is for Restores that could not be listed.
func (c *Controller) Run(ctx context.Context) error {
	if c.events == nil {
		events := record.NewBroadcaster(record.WithContext(ctx))
		events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.clients.CoreV1().Events(c.velero.Namespace)})
		defer events.Shutdown()
		c.events = events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "restoregraph", Host: c.identity})
	}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.velero.Dynamic, time.Minute, c.velero.Namespace, nil)
	informer := factory.ForResource(velero.RestoresResource).Informer()
	c.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			c.queue.Add(u.GetName())
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		c.queue.ShutDown()
		return fmt.Errorf("the Restores of %s were not listed: %w", c.velero.Namespace, context.Cause(ctx))
	}
	c.restores = informer.GetStore()
	c.ready.Store(true)
	c.log.Info("controller started", "namespace", c.velero.Namespace, "identity", c.identity, "restores", cap(c.slots))
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for c.processNext(ctx) {
		}
	}()
	go func() {
		defer wg.Done()
		wait.UntilWithContext(ctx, c.sweepLeases, leaseSweep)
	}()
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	c.mu.Lock()
	for _, e := range c.electing {
		e.cancel()
	}
	c.mu.Unlock()
	c.elections.Wait() // each releases its Lease
	c.ready.Store(false)
	return nil
}

// processNext takes the next Restore's name from the queue and acts on what the
// informer holds of it: a gone or finished one is no longer stood for, a deleted one is
// finalized, any other is stood for. It returns false once the queue is shut down.
func (c *Controller) processNext(ctx context.Context) bool {
	name, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(name)
	obj, exists, err := c.restores.GetByKey(c.velero.Namespace + "/" + name)
	u, _ := obj.(*unstructured.Unstructured)
	switch {
	case err != nil || !exists || u == nil:
		c.stopElecting(name)
	case u.GetDeletionTimestamp() != nil:
		c.stopElecting(name)
		if err := c.finalize(ctx, u); err != nil {
			c.log.Warn("the deleted restore's files are not removed; again later", "restore", name, "error", err)
			c.queue.AddRateLimited(name)
			return true
		}
	case finished(u):
		c.stopElecting(name)
	default:
		c.elect(ctx, u)
	}
	c.queue.Forget(name)
	return true
}
