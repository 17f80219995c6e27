package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/modifier"
	"github.com/restoregraph/restoregraph/plugin/velerohost"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/versionselect"
)

var veleroRestoresGVR = schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "restores"}

// newControllerCmd is restoregraph as Velero's restore controller: it carries out the
// Restore objects of Velero's namespace (velero restore create, GitOps, any tool) as
// graphs, with Velero's restore controller switched off (velero server
// --disable-controllers restore).
func newControllerCmd() *cobra.Command {
	var (
		namespace, pluginDir, admissionNS, identity string
		metricsAddress                              string
		workers                                     int
		itemTimeout, leaseDuration                  time.Duration
	)
	t := &target{flags: genericclioptions.NewConfigFlags(true)}
	cmd := &cobra.Command{
		Use:   "controller --plugins DIR",
		Short: "Carry out Velero's Restore objects as graphs, in place of Velero's restore controller",
		Long: `controller watches the Restore objects of Velero's namespace and carries out each new one,
as Velero's restore controller would: it validates it (a field it does not support fails
validation, named), reads the backup through its location's object-store plugin, restores
it as a graph into the cluster it runs in, and moves the Restore through Velero's phases
(InProgress, then Completed, PartiallyFailed, Failed or FailedValidation) with its
progress, writing its results and log where Velero writes them, so that velero restore
describe --details and velero restore logs show it. Run Velero's server with
--disable-controllers restore,restore-operations,restore-finalizer. Restores that touch
the same objects wait for each other through Leases (--admission-namespace), across
processes, in the order they were created. Several processes may run (the replicas of a
Deployment): each Restore is carried out by the one holding its Lease, and taken over by
another when that one dies, following the journal the first kept in the cluster. A
Restore deleted (velero restore delete) has its files removed from the location first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case pluginDir == "":
				return badInput("--plugins: the directory of Velero's plugins, among them the object store of the backups' locations")
			case workers < 1:
				return badInput("--restores must be at least 1")
			case leaseDuration < 3*time.Second:
				return badInput("--lease-duration must be at least 3s: the Lease is renewed within two thirds of it")
			}
			ctx, cancel := signalContext()
			defer cancel()
			tgt, cfg, stop, err := t.restoreTarget()
			if err != nil {
				return err
			}
			defer stop()
			dyn, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return err
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			rf := restoreFlags{pluginDir: pluginDir}
			host, commands, stopHost, err := rf.pluginHost(cfg, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer stopHost()
			if host == nil {
				return badInput("--plugins %s holds no executable", pluginDir)
			}
			c := &controller{
				velero:   velerohost.Velero{Dynamic: dyn, Secrets: cs.CoreV1(), Namespace: namespace},
				target:   tgt,
				clients:  cs,
				host:     host,
				commands: commands,
				// A dead process's admission expires as soon as its Restores' Leases do.
				admitter: &admission.Cluster{Client: cs, Namespace: admissionNS, Holder: identity, LeaseDuration: leaseDuration},
				run:      restore.RunOptions{ItemTimeout: itemTimeout},
				log:      controllerLogger(cmd),
				identity: identity, leaseDuration: leaseDuration,
				slots: make(chan struct{}, workers), electing: map[string]*election{},
			}
			c.metrics = newControllerMetrics(func() float64 {
				c.mu.Lock()
				defer c.mu.Unlock()
				return float64(len(c.electing))
			})
			stopServing, err := serveOperations(ctx, metricsAddress, c.metrics, &c.ready, c.log)
			if err != nil {
				return badInput("--metrics-address: %w", err)
			}
			defer stopServing()
			events := record.NewBroadcaster(record.WithContext(ctx))
			events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events(namespace)})
			defer events.Shutdown()
			c.events = events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "restoregraph", Host: identity})
			return c.runLoop(ctx, dyn)
		},
	}
	f := cmd.Flags()
	f.StringVar(&namespace, "velero-namespace", "velero", "the namespace Velero runs in: its Restores, Backups and locations")
	f.StringVar(&pluginDir, "plugins", "", "the directory of Velero's plugins, as Velero's /plugins: the object stores of the locations, and RestoreItemActions")
	f.IntVar(&workers, "restores", 4, "Restores carried out at once by this process (those that touch the same objects wait for each other)")
	f.DurationVar(&itemTimeout, "item-timeout", 5*time.Minute, "how long one object's own work may take")
	f.StringVar(&admissionNS, "admission-namespace", "restoregraph-admission", "the namespace of the admission Leases")
	host, _ := os.Hostname()
	f.StringVar(&identity, "identity", fmt.Sprintf("%s-%d", host, os.Getpid()), "this process's name in the Restores' Leases (a Pod's name)")
	f.StringVar(&metricsAddress, "metrics-address", ":8090", "where /metrics (Prometheus), /healthz and /readyz are served")
	f.DurationVar(&leaseDuration, "lease-duration", 15*time.Second, "how long a Restore's Lease holds without renewal: how soon another process takes over the Restore of one that died")
	t.addFlags(cmd)
	return cmd
}

// controllerLogger is the command's logger; a controller logs at Info without -v too.
func controllerLogger(cmd *cobra.Command) *slog.Logger {
	if log := logger(cmd); log != nil {
		return log
	}
	return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
}

// controller carries out Velero's Restore objects.
type controller struct {
	velero   velerohost.Velero
	target   restore.Target
	clients  kubernetes.Interface
	host     *velerohost.Host
	commands [][]string
	admitter admission.Admitter
	run      restore.RunOptions
	log      *slog.Logger
	identity string
	// leaseDuration is how long a Restore's Lease holds without renewal: how soon a
	// dead process's Restore is taken over.
	leaseDuration time.Duration
	slots         chan struct{} // a place per Restore carried out at once

	metrics *controllerMetrics
	events  record.EventRecorder // Events on the Restores
	ready   atomic.Bool          // the informer has listed the Restores
	// restores is the informer's store of the Restores.
	restores cache.Store

	queue     workqueue.TypedRateLimitingInterface[string]
	mu        sync.Mutex
	electing  map[string]*election
	elections sync.WaitGroup
}

// runLoop watches Restores through an informer and hands each that is not finished to
// an election of its own (elect), from a rate-limited work queue, until ctx is done.
func (c *controller) runLoop(ctx context.Context, dyn dynamic.Interface) error {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, time.Minute, c.velero.Namespace, nil)
	informer := factory.ForResource(veleroRestoresGVR).Informer()
	c.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			c.queue.Add(u.GetName())
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			enqueue(obj)
		}}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("the Restores of %s were not listed: %w", c.velero.Namespace, context.Cause(ctx))
	}
	c.restores = informer.GetStore()
	c.ready.Store(true)
	c.log.Info("controller started", "namespace", c.velero.Namespace, "identity", c.identity, "restores", cap(c.slots))
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			name, shutdown := c.queue.Get()
			if shutdown {
				return
			}
			obj, exists, err := informer.GetStore().GetByKey(c.velero.Namespace + "/" + name)
			u, _ := obj.(*unstructured.Unstructured)
			switch {
			case err != nil || !exists || u == nil:
				c.stopElecting(name)
			case u.GetDeletionTimestamp() != nil:
				c.stopElecting(name)
				if err := c.finalize(ctx, u); err != nil {
					c.log.Warn("the deleted restore's files are not removed; again later", "restore", name, "error", err)
					c.queue.AddRateLimited(name)
					c.queue.Done(name)
					continue
				}
			case finished(u):
				c.stopElecting(name)
			default:
				c.elect(ctx, u)
			}
			c.queue.Forget(name)
			c.queue.Done(name)
		}
	})
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	c.mu.Lock()
	for _, e := range c.electing {
		e.cancel()
	}
	c.mu.Unlock()
	c.elections.Wait() // each releases its Lease
	factory.Shutdown()
	return nil
}

func isNew(u *unstructured.Unstructured) bool {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return phase == "" || phase == "New"
}

// finished reports whether a Restore has ended, or is none of this controller's to carry
// out (only New and InProgress ones are).
func finished(u *unstructured.Unstructured) bool {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return phase != "" && phase != "New" && phase != "InProgress"
}

// TakenByAnnotation names the controller process carrying out a Restore.
const TakenByAnnotation = "restoregraph.dev/taken-by"

// election is this process's candidacy to carry out one Restore.
type election struct {
	cancel context.CancelFunc
}

// elect stands this process for carrying out Restore o: one Lease per Restore
// (restoregraph-restore-NAME, owned by the Restore, so that deleting it deletes the
// Lease), through client-go's leader election. The process that holds it carries the
// Restore out; if it dies, its Lease expires and another one that stands takes the
// Restore over and runs it again: what was made is found by its source UID and taken
// as restored, nothing is made twice.
func (c *controller) elect(ctx context.Context, o *unstructured.Unstructured) {
	name := o.GetName()
	c.mu.Lock()
	if _, ok := c.electing[name]; ok {
		c.mu.Unlock()
		return
	}
	ectx, cancel := context.WithCancel(ctx)
	e := &election{cancel: cancel}
	c.electing[name] = e
	c.mu.Unlock()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "restoregraph-restore-" + name, Namespace: c.velero.Namespace,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "velero.io/v1", Kind: "Restore", Name: name, UID: o.GetUID()}}}}
	if _, err := c.clients.CoordinationV1().Leases(c.velero.Namespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		c.log.Warn("the restore's Lease is not made; again later", "restore", name, "error", err)
		c.forget(name, e)
		c.queue.AddRateLimited(name)
		return
	}
	var leadErr error
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{LeaseMeta: lease.ObjectMeta, Client: c.clients.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: c.identity}},
		LeaseDuration: c.leaseDuration, RenewDeadline: c.leaseDuration * 2 / 3, RetryPeriod: c.leaseDuration / 7,
		ReleaseOnCancel: true, Name: "restore " + name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				leadErr = c.lead(ctx, name)
				cancel()
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		c.log.Warn("no election for the restore", "restore", name, "error", err)
		c.forget(name, e)
		return
	}
	c.elections.Go(func() {
		le.Run(ectx)
		c.forget(name, e)
		if leadErr != nil && ctx.Err() == nil {
			c.log.Warn("restore not carried out; again later", "restore", name, "error", leadErr)
			c.queue.AddRateLimited(name)
		}
	})
}

// stopElecting ends this process's candidacy for Restore name.
func (c *controller) stopElecting(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.electing[name]; ok {
		e.cancel()
	}
}

func (c *controller) forget(name string, e *election) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.electing[name] == e {
		delete(c.electing, name)
	}
}

// lead carries out Restore name, this process holding its Lease, once every Restore
// created before it has entered admission (awaitEarlier): a new one is moved to
// InProgress, one InProgress (its process died) is taken over, each under its
// resourceVersion. When ctx ends first (the Lease lost, the process stopping), no end is
// recorded: whoever holds the Lease next carries the Restore on. Its error is for a
// failure to take or record it, which is tried again.
func (c *controller) lead(ctx context.Context, name string) error {
	c.metrics.waiting.WithLabelValues("earlier").Inc()
	ok := c.awaitEarlier(ctx, name)
	c.metrics.waiting.WithLabelValues("earlier").Dec()
	if !ok {
		return nil
	}
	c.metrics.waiting.WithLabelValues("slot").Inc()
	select {
	case c.slots <- struct{}{}:
		c.metrics.waiting.WithLabelValues("slot").Dec()
		defer func() { <-c.slots }()
	case <-ctx.Done():
		c.metrics.waiting.WithLabelValues("slot").Dec()
		return nil
	}
	client := c.velero.Dynamic.Resource(veleroRestoresGVR).Namespace(c.velero.Namespace)
	o, err := client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || finished(o) {
		return err
	}
	log := c.log.With("restore", name)
	started := time.Now()
	if isNew(o) {
		_ = unstructured.SetNestedField(o.Object, "InProgress", "status", "phase")
		_ = unstructured.SetNestedField(o.Object, started.UTC().Format(time.RFC3339), "status", "startTimestamp")
	} else {
		if ts, _, _ := unstructured.NestedString(o.Object, "status", "startTimestamp"); ts != "" {
			if t, err := time.Parse(time.RFC3339, ts); err == nil {
				started = t
			}
		}
		from := o.GetAnnotations()[TakenByAnnotation]
		log.Info("restore taken over", "from", from)
		c.metrics.takenOver.Inc()
		c.events.Eventf(o, corev1.EventTypeNormal, "TakenOver", "taken over by %s from %s, which stopped holding its Lease", c.identity, from)
	}
	ann := o.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[TakenByAnnotation] = c.identity
	o.SetAnnotations(ann)
	if !slices.Contains(o.GetFinalizers(), ExternalResourcesFinalizer) {
		o.SetFinalizers(append(o.GetFinalizers(), ExternalResourcesFinalizer))
	}
	taken, err := client.Update(ctx, o, metav1.UpdateOptions{})
	if err != nil {
		return err // a conflict: it changed since it was read; read it again
	}
	log.Info("restore taken")
	c.events.Eventf(taken, corev1.EventTypeNormal, "Taken", "taken by %s", c.identity)
	c.metrics.inProgress.Inc()
	status := c.restoreOne(ctx, taken, started, log)
	c.metrics.inProgress.Dec()
	if ctx.Err() != nil {
		log.Info("restore left to whoever holds its Lease next", "cause", context.Cause(ctx))
		return nil
	}
	log.Info("restore ended", "phase", status["phase"])
	phase, _ := status["phase"].(string)
	c.metrics.restores.WithLabelValues(phase).Inc()
	c.metrics.duration.Observe(time.Since(started).Seconds())
	kind := corev1.EventTypeNormal
	if phase != "Completed" {
		kind = corev1.EventTypeWarning
	}
	c.events.Eventf(taken, kind, phase, "%s", endMessage(status))
	// Once it is recorded ended, this process stops standing for it: the write must not
	// be cut short by that.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	return c.velero.UpdateRestoreStatus(rctx, name, status)
}

// restoreOne carries out the Restore o, taken at started, and returns its final status;
// a restore that ran has its results and log recorded in its location.
func (c *controller) restoreOne(ctx context.Context, o *unstructured.Unstructured, started time.Time, log *slog.Logger) map[string]any {
	now := func() string { return time.Now().UTC().Format(time.RFC3339) }
	invalid := func(err error) map[string]any {
		return map[string]any{"phase": "FailedValidation", "validationErrors": []any{err.Error()}, "completionTimestamp": now()}
	}
	failed := func(err error) map[string]any {
		return map[string]any{"phase": "Failed", "failureReason": err.Error(), "completionTimestamp": now()}
	}
	data, err := o.MarshalJSON()
	if err != nil {
		return invalid(err)
	}
	spec, err := velerohost.ReadRestore(data)
	if err != nil {
		return invalid(err)
	}
	var vb *velerohost.Backup
	if spec.Schedule != "" {
		vb, err = c.velero.LatestOfSchedule(ctx, spec.Schedule, false)
	} else {
		vb, err = c.velero.Backup(ctx, spec.Backup)
	}
	if err != nil {
		return invalid(err)
	}
	store, err := c.host.OpenLocation(ctx, c.velero, vb.Location, c.commands...)
	if err != nil {
		return failed(err)
	}
	defer store.Close()
	b, err := archive.Open(ctx, store, vb.Key(), archive.Options{})
	if err != nil {
		return failed(fmt.Errorf("backup %s: %w", vb.Name, err))
	}
	defer b.Close()
	sel := spec.Selection
	if spec.ModifierConfigMap != "" {
		cm, err := c.clients.CoreV1().ConfigMaps(c.velero.Namespace).Get(ctx, spec.ModifierConfigMap, metav1.GetOptions{})
		if err != nil {
			return invalid(fmt.Errorf("spec.resourceModifier: %w", err))
		}
		if sel.Modifiers, err = modifier.FromConfigMap(cm); err != nil {
			return invalid(fmt.Errorf("spec.resourceModifier: %w", err))
		}
	}
	// Velero's own ConfigMap of version priorities, when there is one; a bad line is
	// skipped, as Velero skips it.
	sel.Priorities, _, err = versionselect.LoadPriorities(ctx, c.clients.CoreV1(), c.velero.Namespace, versionselect.DefaultConfigMapName,
		versionselect.ParseOptions{Lenient: true})
	if err != nil {
		return failed(err)
	}
	rf := restoreFlags{}
	plugins, err := rf.register(ctx, c.host, c.commands, io.Discard)
	if err != nil {
		return failed(err)
	}
	p, err := restore.NewPlan(ctx, b, c.target, restore.PlanOptions{BackupName: vb.Name, Selection: sel,
		Extensions: restore.Extensions{Plugins: plugins}})
	if err != nil {
		return invalid(err)
	}
	// The journal is in the cluster, beside the Restore and owned by it: whoever takes the
	// Restore over follows the operations plugins started, rather than starting them again.
	journal, err := restore.OpenClusterJournal(ctx, c.velero.Dynamic, c.velero.Namespace, journalName(o.GetName()),
		&metav1.OwnerReference{APIVersion: "velero.io/v1", Kind: "Restore", Name: o.GetName(), UID: o.GetUID()})
	if err != nil {
		return failed(err)
	}
	opts := c.run
	opts.Name, opts.Logger, opts.Journal = o.GetName(), log, journal
	opts.Admitter = restoreAdmitter{Admitter: c.admitter, c: c, o: o, log: log}
	opts.ItemOperationTimeout = spec.ItemOperationTimeout
	// Progress counts what Velero's record counts: the objects the plan takes on, not
	// those it leaves to the target or filters out.
	takenOn := map[types.UID]bool{}
	for po := range p.Objects() {
		if po.Excluded == "" {
			takenOn[po.UID] = true
		}
	}
	var done atomic.Int64
	opts.OnEvent = func(ev restore.Event) {
		if ev.Item != nil && takenOn[ev.Item.UID] && (ev.Type == restore.EventSucceeded || ev.Type == restore.EventFailed || ev.Type == restore.EventSkipped) {
			done.Add(1)
		}
	}
	stopProgress := c.progress(ctx, o.GetName(), len(takenOn), &done)
	rep, err := restore.Apply(ctx, p, c.target, opts)
	stopProgress()
	if rep == nil {
		return failed(err)
	}
	for ob := range rep.Objects() {
		c.metrics.objects.WithLabelValues(schema.GroupResource{Group: ob.Group, Resource: ob.Resource}.String(), string(ob.Status)).Inc()
	}
	var text bytes.Buffer
	printReport(&text, rep)
	rec := restoreRecord(o.GetName(), vb.Name, rep, text.Bytes())
	rec.Started = started
	// A restore cut short (its Lease lost, the Restore deleted, the process stopping)
	// records nothing: whoever carries it on records it.
	if ctx.Err() == nil {
		if rerr := velerohost.PutRestoreFiles(context.WithoutCancel(ctx), store, vb.Location, rec); rerr != nil {
			log.Warn("the restore's results are not recorded in its location", "error", rerr)
		}
	}
	status := rec.Status()
	if err != nil {
		status = failed(err)
		status["progress"] = rec.Status()["progress"]
	}
	return status
}

// ExternalResourcesFinalizer is Velero's finalizer on the Restores its restore
// controller takes: their files in the location are removed before they go.
const ExternalResourcesFinalizer = "restores.velero.io/external-resources-finalizer"

// finalize does what Velero's restore controller does for a deleted Restore that holds
// ExternalResourcesFinalizer: it removes the restore's files from the location of its
// backup (none when the backup is gone, as Velero), then the finalizer, under the
// Restore's resourceVersion (of several processes, one does it; the files' removal is
// the same done twice).
func (c *controller) finalize(ctx context.Context, u *unstructured.Unstructured) error {
	if !slices.Contains(u.GetFinalizers(), ExternalResourcesFinalizer) {
		return nil
	}
	backup, _, _ := unstructured.NestedString(u.Object, "spec", "backupName")
	if backup != "" {
		loc, err := c.velero.BackupLocation(ctx, backup)
		switch {
		case errors.Is(err, velerohost.ErrBackupNotFound):
			c.log.Info("the deleted restore's backup is gone: its files are left", "restore", u.GetName(), "backup", backup)
		case err != nil:
			return err
		default:
			store, err := c.host.OpenLocation(ctx, c.velero, loc, c.commands...)
			if err != nil {
				return err
			}
			err = velerohost.DeleteRestoreFiles(ctx, store, loc, u.GetName())
			store.Close()
			if err != nil {
				return err
			}
		}
	}
	o := u.DeepCopy()
	o.SetFinalizers(slices.DeleteFunc(o.GetFinalizers(), func(f string) bool { return f == ExternalResourcesFinalizer }))
	_, err := c.velero.Dynamic.Resource(veleroRestoresGVR).Namespace(c.velero.Namespace).Update(ctx, o, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or changed: the change brings it here again
	}
	if err == nil {
		c.log.Info("deleted restore's files removed", "restore", u.GetName())
	}
	return err
}

// AdmissionAnnotation says where a Restore stands in admission: "waiting" for an
// operation that touches the same objects, then "admitted".
const AdmissionAnnotation = "restoregraph.dev/admission"

// awaitEarlier waits until every unfinished Restore created before Restore name (by
// creation time, then name) has entered admission, or has ended or is being deleted;
// false when ctx ends
// first. So overlapping Restores are admitted in the order they were created, whichever
// replica takes them and however long each takes to plan: admission's tickets are taken
// in that order. The cost is that Restores are planned one after another (their restores
// still run at once where they do not overlap). A Restore taken over after its process
// died enters admission again, behind those that entered meanwhile.
func (c *controller) awaitEarlier(ctx context.Context, name string) bool {
	told := false
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(context.Context) (bool, error) {
		obj, ok, _ := c.restores.GetByKey(c.velero.Namespace + "/" + name)
		if !ok {
			return true, nil // gone: lead finds it so
		}
		me := obj.(*unstructured.Unstructured)
		for _, obj := range c.restores.List() {
			r := obj.(*unstructured.Unstructured)
			if !createdBefore(r, me) || finished(r) || r.GetDeletionTimestamp() != nil || r.GetAnnotations()[AdmissionAnnotation] != "" {
				continue
			}
			if !told {
				c.log.Info("waiting for a Restore created earlier to enter admission", "restore", name, "earlier", r.GetName())
				told = true
			}
			return false, nil
		}
		return true, nil
	})
	return err == nil
}

// createdBefore orders Restores by creation time, then name.
func createdBefore(a, b *unstructured.Unstructured) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return a.GetName() < b.GetName()
}

// markAdmission sets AdmissionAnnotation on Restore o. A mark that fails is logged: the
// Restores created after it then wait until it ends.
func (c *controller) markAdmission(ctx context.Context, o *unstructured.Unstructured, state string) {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AdmissionAnnotation: state}}})
	_, err := c.velero.Dynamic.Resource(veleroRestoresGVR).Namespace(c.velero.Namespace).Patch(ctx, o.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		c.log.Warn("the restore's admission is not marked", "restore", o.GetName(), "state", state, "error", err)
	}
}

// restoreAdmitter admits Restore o through Admitter, and says where it stands: once its
// operation has entered admission (admission calls OnWait after the operation has its
// ticket) it is marked "waiting" when it must wait, with a log line and an Event naming
// what it waits for, and counted in the metrics; "admitted" when it runs.
type restoreAdmitter struct {
	admission.Admitter
	c   *controller
	o   *unstructured.Unstructured
	log *slog.Logger
}

func (a restoreAdmitter) Admit(ctx context.Context, op admission.Operation) (func(), error) {
	m := a.c.metrics
	var waitingSince time.Time
	op.OnWait = func(cs []admission.Conflict) {
		waitingSince = time.Now()
		m.waits.Inc()
		m.waiting.WithLabelValues("admission").Inc()
		a.c.markAdmission(ctx, a.o, "waiting")
		names := make([]string, len(cs))
		for i, cf := range cs {
			a.log.Info("waiting for an operation that touches the same objects", "operation", cf.String())
			names[i] = cf.Kind + " " + cf.ID
		}
		a.c.events.Eventf(a.o, corev1.EventTypeNormal, "WaitingForAdmission", "waits for %s, which touch the same objects", strings.Join(names, ", "))
	}
	release, err := a.Admitter.Admit(ctx, op)
	if !waitingSince.IsZero() { // OnWait is called from Admit's goroutine, before it returns
		m.waiting.WithLabelValues("admission").Dec()
		m.waited.Observe(time.Since(waitingSince).Seconds())
	}
	if err == nil {
		a.c.markAdmission(ctx, a.o, "admitted")
	}
	return release, err
}

// journalName names the ConfigMaps of a Restore's journal: restoregraph-journal-NAME,
// or its hash when that is too long for a ConfigMap's name.
func journalName(restoreName string) string {
	name := "restoregraph-journal-" + restoreName
	if len(name) > 240 {
		h := fnv.New64a()
		h.Write([]byte(restoreName))
		name = fmt.Sprintf("restoregraph-journal-%016x", h.Sum64())
	}
	return name
}

// progress updates the Restore's status.progress every two seconds until stopped.
func (c *controller) progress(ctx context.Context, name string, total int, done *atomic.Int64) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			err := c.velero.UpdateRestoreStatus(ctx, name, map[string]any{"progress": map[string]any{
				"totalItems": int64(total), "itemsRestored": done.Load()}})
			if err != nil && ctx.Err() == nil {
				c.log.Debug("progress not recorded", "restore", name, "error", err)
			}
		}, 2*time.Second)
	}()
	return func() { cancel(); <-finished }
}

// endMessage says how a Restore ended, for its Event.
func endMessage(status map[string]any) string {
	if v, ok := status["validationErrors"].([]any); ok && len(v) > 0 {
		return fmt.Sprint(v[0])
	}
	if r, ok := status["failureReason"].(string); ok {
		return r
	}
	p, _ := status["progress"].(map[string]any)
	return fmt.Sprintf("%v of %v objects restored, %v errors, %v warnings", p["itemsRestored"], p["totalItems"], status["errors"], status["warnings"])
}
