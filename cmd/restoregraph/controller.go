package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
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
		namespace, pluginDir, admissionNS string
		workers                           int
		itemTimeout                       time.Duration
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
--disable-controllers restore. Restores that touch the same objects wait for each other
through Leases (--admission-namespace), across processes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if pluginDir == "" {
				return badInput("--plugins: the directory of Velero's plugins, among them the object store of the backups' locations")
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
				admitter: &admission.Cluster{Client: cs, Namespace: admissionNS},
				run:      restore.RunOptions{ItemTimeout: itemTimeout},
				log:      logger(cmd),
			}
			return c.runLoop(ctx, dyn, workers)
		},
	}
	f := cmd.Flags()
	f.StringVar(&namespace, "velero-namespace", "velero", "the namespace Velero runs in: its Restores, Backups and locations")
	f.StringVar(&pluginDir, "plugins", "", "the directory of Velero's plugins, as Velero's /plugins: the object stores of the locations, and RestoreItemActions")
	f.IntVar(&workers, "restores", 4, "Restores carried out at once by this process (those that touch the same objects wait for each other)")
	f.DurationVar(&itemTimeout, "item-timeout", 5*time.Minute, "how long one object's own work may take")
	f.StringVar(&admissionNS, "admission-namespace", "restoregraph-admission", "the namespace of the admission Leases")
	t.addFlags(cmd)
	return cmd
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
}

// runLoop watches Restores through an informer and carries out the new ones from a
// rate-limited work queue, workers at a time, until ctx is done.
func (c *controller) runLoop(ctx context.Context, dyn dynamic.Interface, workers int) error {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 10*time.Minute, c.velero.Namespace, nil)
	informer := factory.ForResource(veleroRestoresGVR).Informer()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok && isNew(u) {
			queue.Add(u.GetName())
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("the Restores of %s were not listed: %w", c.velero.Namespace, context.Cause(ctx))
	}
	c.log.Info("controller started", "namespace", c.velero.Namespace, "restores", workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				name, shutdown := queue.Get()
				if shutdown {
					return
				}
				if err := c.carryOut(ctx, name); err != nil && ctx.Err() == nil {
					c.log.Warn("restore not carried out; again later", "restore", name, "error", err)
					queue.AddRateLimited(name)
				} else {
					queue.Forget(name)
				}
				queue.Done(name)
			}
		})
	}
	<-ctx.Done()
	queue.ShutDown()
	wg.Wait()
	factory.Shutdown()
	return nil
}

func isNew(u *unstructured.Unstructured) bool {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return phase == "" || phase == "New"
}

// carryOut takes Restore name, when it is new, and carries it out. It takes it by
// moving it to InProgress under its resourceVersion: of several processes, one does.
// Its error is for a failure to take or record it, which is tried again; how the
// restore went is in the Restore.
func (c *controller) carryOut(ctx context.Context, name string) error {
	client := c.velero.Dynamic.Resource(veleroRestoresGVR).Namespace(c.velero.Namespace)
	o, err := client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || !isNew(o) {
		return err
	}
	started := time.Now()
	_ = unstructured.SetNestedField(o.Object, "InProgress", "status", "phase")
	_ = unstructured.SetNestedField(o.Object, started.UTC().Format(time.RFC3339), "status", "startTimestamp")
	claimed, err := client.Update(ctx, o, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return nil // changed since it was read: another process took it, or it is seen again
	}
	if err != nil {
		return err
	}
	log := c.log.With("restore", name)
	log.Info("restore taken")
	status := c.restoreOne(ctx, claimed, started, log)
	log.Info("restore ended", "phase", status["phase"])
	// The restore's context may be done: what it came to is recorded all the same.
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
	opts := c.run
	opts.Name, opts.Admitter, opts.Logger = o.GetName(), c.admitter, log
	opts.ItemOperationTimeout = spec.ItemOperationTimeout
	var done atomic.Int64
	opts.OnEvent = func(ev restore.Event) {
		if ev.Item != nil && (ev.Type == restore.EventSucceeded || ev.Type == restore.EventFailed || ev.Type == restore.EventSkipped) {
			done.Add(1)
		}
	}
	stopProgress := c.progress(ctx, o.GetName(), p.Len(), &done)
	rep, err := restore.Apply(ctx, p, c.target, opts)
	stopProgress()
	if rep == nil {
		return failed(err)
	}
	var text bytes.Buffer
	printReport(&text, rep)
	rec := restoreRecord(o.GetName(), vb.Name, rep, text.Bytes())
	rec.Started = started
	if rerr := c.velero.FinishRestore(context.WithoutCancel(ctx), store, vb.Location, rec); rerr != nil {
		log.Warn("the restore's results are not recorded in its location", "error", rerr)
	}
	status := rec.Status()
	if err != nil {
		status = failed(err)
		status["progress"] = rec.Status()["progress"]
	}
	return status
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
