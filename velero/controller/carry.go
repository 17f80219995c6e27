package controller

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync/atomic"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/modifier"
	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/velero"
	"github.com/restoregraph/restoregraph/versionselect"
)

// carryOut carries out the Restore o, taken at started, and returns its final status; a
// restore that ran has its results and log recorded in its location. An error, and no
// status, says that what it had to read could not be read because the API server, etcd
// or a location was away (restore.IsTransient), or was refused by an authorizer not yet
// ready (refusedButAllowed), not because of the Restore: it is carried out again later
// rather than ended.
func (c *Controller) carryOut(ctx context.Context, o *unstructured.Unstructured, started time.Time, log *slog.Logger) (velerov1.RestoreStatus, error) {
	start := metav1.NewTime(started.UTC().Truncate(time.Second))
	target := c.target // the Restore's creator's, under asRequester
	end := func() *metav1.Time { t := metav1.NewTime(time.Now().UTC().Truncate(time.Second)); return &t }
	invalid := func(err error) (velerov1.RestoreStatus, error) {
		if restore.IsTransient(err) {
			return velerov1.RestoreStatus{}, err
		}
		return velerov1.RestoreStatus{Phase: velerov1.RestorePhaseFailedValidation, ValidationErrors: []string{err.Error()},
			StartTimestamp: &start, CompletionTimestamp: end()}, nil
	}
	failedStatus := func(err error) velerov1.RestoreStatus {
		return velerov1.RestoreStatus{Phase: velerov1.RestorePhaseFailed, FailureReason: err.Error(), StartTimestamp: &start, CompletionTimestamp: end()}
	}
	failed := func(err error) (velerov1.RestoreStatus, error) {
		if restore.IsTransient(err) || refusedButAllowed(ctx, target, err) {
			return velerov1.RestoreStatus{}, err
		}
		return failedStatus(err), nil
	}
	data, err := o.MarshalJSON()
	if err != nil {
		return invalid(err)
	}
	spec, err := velero.ReadRestore(data)
	if err != nil {
		return invalid(err)
	}
	sel := spec.Selection
	if err := c.guard.checkMappings(sel, c.velero.Namespace); err != nil {
		return invalid(err)
	}
	var req Requester
	if c.asRequester != nil {
		if req, err = c.requester(ctx, o); err != nil {
			return invalid(err)
		}
		if target, err = c.asRequester(req); err != nil {
			return failed(fmt.Errorf("restoring as %s: %w", req.User, err))
		}
		log = log.With("as", req.User)
	}
	if spec.ModifierConfigMap != "" {
		cm, err := c.clients.CoreV1().ConfigMaps(c.velero.Namespace).Get(ctx, spec.ModifierConfigMap, metav1.GetOptions{})
		if err != nil {
			return invalid(fmt.Errorf("spec.resourceModifier: %w", err))
		}
		if sel.Modifiers, err = modifier.FromConfigMap(cm); err != nil {
			return invalid(fmt.Errorf("spec.resourceModifier: %w", err))
		}
		if err := c.guard.checkModifiers(sel.Modifiers); err != nil {
			return invalid(err)
		}
	}
	var vb *velero.Backup
	if spec.Schedule != "" {
		vb, err = c.velero.LatestOfSchedule(ctx, spec.Schedule, false)
	} else {
		vb, err = c.velero.Backup(ctx, spec.Backup)
	}
	if err != nil {
		return invalid(err)
	}
	if err := c.guard.checkLocation(vb); err != nil {
		return invalid(err)
	}
	store, err := c.velero.OpenLocation(ctx, c.host, vb.Location, c.commands...)
	if err != nil {
		return failed(err)
	}
	defer store.Close()
	b, err := archive.Open(ctx, store, vb.Key(), archive.Options{})
	if err != nil {
		return failed(fmt.Errorf("backup %s: %w", vb.Name, err))
	}
	defer b.Close()
	volumes, err := velero.ReadVolumes(ctx, store, vb.Key())
	if err != nil {
		return failed(fmt.Errorf("backup %s: %w", vb.Name, err))
	}
	// Velero's own ConfigMap of version priorities, when there is one; a bad line is
	// skipped, as Velero skips it.
	sel.Priorities, _, err = versionselect.LoadPriorities(ctx, c.clients.CoreV1(), c.velero.Namespace, versionselect.DefaultConfigMapName,
		versionselect.ParseOptions{Lenient: true})
	if err != nil {
		return failed(err)
	}
	// restoregraph's ConfigMap of the order between kinds, beside it.
	if sel.Order, err = restore.LoadOrder(ctx, c.clients.CoreV1(), c.velero.Namespace, restore.OrderConfigMap); err != nil {
		return failed(err)
	}
	found, err := c.host.Discover(ctx, c.commands...)
	if err != nil {
		log.Warn("plugins left out", "error", err)
	}
	plugins := &plugin.Registry{}
	if err := c.host.Register(plugins, found); err != nil {
		return failed(err)
	}
	ext := restore.Extensions{Plugins: plugins}
	if sel.RestorePVs == nil || *sel.RestorePVs {
		var closeSnapshotters func()
		ext.VolumeSnapshotters, closeSnapshotters = c.velero.VolumeSnapshotters(ctx, c.host, volumes, c.commands...)
		defer closeSnapshotters()
	}
	pv, err := c.velero.PodVolumeRestorer(ctx, vb, c.velero)
	if err != nil {
		return failed(err)
	}
	pv.OwnedByRestore = true // deleted with the Restore, as Velero's
	ext.PodVolumes = pv
	p, err := restore.NewPlan(ctx, b, target, restore.PlanOptions{BackupName: vb.Name, Selection: sel, Volumes: volumes, Extensions: ext})
	if err != nil {
		return invalid(err)
	}
	if err := c.guard.checkPlan(p, c.velero.Namespace); err != nil {
		return invalid(err)
	}
	if c.asRequester != nil {
		if err := checkRights(ctx, p, target, req, sel.Existing == restore.Update, c.namespaceExists); err != nil {
			return invalid(err)
		}
	}
	// The journal is in the cluster, beside the Restore and owned by it: whoever takes the
	// Restore over follows the operations plugins started, rather than starting them again.
	journal, err := restore.OpenClusterJournal(ctx, c.velero.Dynamic, c.velero.Namespace, journalName(o.GetName()),
		&metav1.OwnerReference{APIVersion: velerov1.SchemeGroupVersion.String(), Kind: "Restore", Name: o.GetName(), UID: o.GetUID()})
	if err != nil {
		return failed(err)
	}
	opts := c.run
	opts.Name, opts.Logger, opts.Journal = o.GetName(), log, journal
	// Velero's own actions read the Restore they are part of: its namespace, UID and spec.
	raw, _, _ := unstructured.NestedMap(o.Object, "spec")
	opts.Request = &ria.Restore{Namespace: o.GetNamespace(), UID: o.GetUID(), Spec: raw}
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
	rep, err := restore.Apply(ctx, p, target, opts)
	stopProgress()
	if rep == nil {
		return failed(err)
	}
	for ob := range rep.Objects() {
		c.metrics.ObjectEnded(schema.GroupResource{Group: ob.Group, Resource: ob.Resource}, ob.Status)
	}
	rec := velero.RecordOf(o.GetName(), vb.Name, rep)
	rec.Started = started
	// A restore cut short (its Lease lost, the Restore deleted, the process stopping)
	// records nothing: whoever carries it on records it.
	if ctx.Err() == nil {
		if rerr := store.PutRestoreFiles(context.WithoutCancel(ctx), rec); rerr != nil {
			log.Warn("the restore's results are not recorded in its location", "error", rerr)
		}
		// As Velero's restore does at its end; kept for whoever runs it again otherwise.
		if rep.OK() && velero.MovesData(volumes) {
			if derr := c.velero.DeleteDataUploadResults(context.WithoutCancel(ctx), o.GetUID()); derr != nil {
				log.Warn("the DataUpload results are left behind", "error", derr)
			}
		}
	}
	status := rec.Status()
	if err != nil {
		progress := status.Progress
		status = failedStatus(err)
		status.Progress = progress
	}
	return status, nil
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
func (c *Controller) progress(ctx context.Context, name string, total int, done *atomic.Int64) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			err := c.velero.UpdateRestoreStatus(ctx, name, func(s *velerov1.RestoreStatus) {
				s.Progress = &velerov1.RestoreProgress{TotalItems: total, ItemsRestored: int(done.Load())}
			})
			if err != nil && ctx.Err() == nil {
				c.log.Debug("progress not recorded", "restore", name, "error", err)
			}
		}, 2*time.Second)
	}()
	return func() { cancel(); <-finished }
}

// endMessage says how a Restore ended, for its Event.
func endMessage(s velerov1.RestoreStatus) string {
	switch {
	case len(s.ValidationErrors) > 0:
		return s.ValidationErrors[0]
	case s.FailureReason != "":
		return s.FailureReason
	}
	var total, restored int
	if p := s.Progress; p != nil {
		total, restored = p.TotalItems, p.ItemsRestored
	}
	return fmt.Sprintf("%d of %d objects restored, %d errors, %d warnings", restored, total, s.Errors, s.Warnings)
}

// namespaceExists reports whether the cluster has namespace name, read with the
// controller's own rights.
func (c *Controller) namespaceExists(ctx context.Context, name string) (bool, error) {
	_, err := c.clients.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("namespace %s: %w", name, err)
}
