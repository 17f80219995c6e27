package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/restoregraph/restoregraph/velero"
)

// TakenByAnnotation names the controller process carrying out a Restore.
const TakenByAnnotation = "restoregraph.dev/taken-by"

// ExternalResourcesFinalizer is Velero's finalizer on the Restores its restore
// controller takes: their files in the location are removed before they go.
const ExternalResourcesFinalizer = "restores.velero.io/external-resources-finalizer"

func phaseOf(u *unstructured.Unstructured) velerov1.RestorePhase {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return velerov1.RestorePhase(phase)
}

func isNew(u *unstructured.Unstructured) bool {
	phase := phaseOf(u)
	return phase == "" || phase == velerov1.RestorePhaseNew
}

// finished reports whether a Restore has ended, or is none of this controller's to carry
// out (only New and InProgress ones are).
func finished(u *unstructured.Unstructured) bool {
	return !isNew(u) && phaseOf(u) != velerov1.RestorePhaseInProgress
}

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
func (c *Controller) elect(ctx context.Context, o *unstructured.Unstructured) {
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
		OwnerReferences: []metav1.OwnerReference{{APIVersion: velerov1.SchemeGroupVersion.String(), Kind: "Restore", Name: name, UID: o.GetUID()}}}}
	if _, err := c.clients.CoordinationV1().Leases(c.velero.Namespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		c.log.Warn("the restore's Lease is not made; again later", "restore", name, "error", err)
		c.forget(name, e)
		c.queue.AddRateLimited(name)
		return
	}
	// OnStartedLeading runs on a goroutine of the elector's own, which Run does not wait
	// for: it hands the leader's context over, and the Restore is carried out here, on a
	// goroutine the controller waits for. The channel has room for the one send, so a
	// hand-over after the election ended blocks nobody.
	leading := make(chan context.Context, 1)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{LeaseMeta: lease.ObjectMeta, Client: c.clients.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: c.identity}},
		LeaseDuration: c.leaseDuration, RenewDeadline: c.leaseDuration * 2 / 3, RetryPeriod: c.leaseDuration / 7,
		ReleaseOnCancel: true, Name: "restore " + name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { leading <- ctx },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		c.log.Warn("no election for the restore", "restore", name, "error", err)
		c.forget(name, e)
		return
	}
	c.elections.Add(1)
	go func() {
		defer c.elections.Done()
		ran := make(chan struct{})
		go func() { defer close(ran); le.Run(ectx) }()
		var leadErr error
		select {
		case lctx := <-leading:
			leadErr = c.lead(lctx, name)
			cancel()
			<-ran // the Lease released
		case <-ran:
			// The election ended without leading, or having just taken the Lease (it
			// ended as the Restore did, and released it).
		}
		if leadErr == nil && ctx.Err() == nil {
			c.dropLease(ctx, name)
		}
		c.forget(name, e)
		if leadErr != nil && ctx.Err() == nil {
			c.log.Warn("restore not carried out; again later", "restore", name, "error", leadErr)
			c.queue.AddRateLimited(name)
		}
	}()
}

// stopElecting ends this process's candidacy for Restore name.
func (c *Controller) stopElecting(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.electing[name]; ok {
		e.cancel()
	}
}

func (c *Controller) forget(name string, e *election) {
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
func (c *Controller) lead(ctx context.Context, name string) error {
	c.metrics.Waiting(WaitEarlier, 1)
	ok := c.awaitEarlier(ctx, name)
	c.metrics.Waiting(WaitEarlier, -1)
	if !ok {
		return nil
	}
	c.metrics.Waiting(WaitSlot, 1)
	select {
	case c.slots <- struct{}{}:
		c.metrics.Waiting(WaitSlot, -1)
		defer func() { <-c.slots }()
	case <-ctx.Done():
		c.metrics.Waiting(WaitSlot, -1)
		return nil
	}
	client := c.velero.Dynamic.Resource(velero.RestoresResource).Namespace(c.velero.Namespace)
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
		at := metav1.NewTime(started.UTC().Truncate(time.Second))
		if err := velero.ChangeRestoreStatus(o, func(s *velerov1.RestoreStatus) {
			s.Phase, s.StartTimestamp = velerov1.RestorePhaseInProgress, &at
		}); err != nil {
			return err
		}
	} else {
		if ts, _, _ := unstructured.NestedString(o.Object, "status", "startTimestamp"); ts != "" {
			if t, err := time.Parse(time.RFC3339, ts); err == nil {
				started = t
			}
		}
		from := o.GetAnnotations()[TakenByAnnotation]
		log.Info("restore taken over", "from", from)
		c.metrics.TakenOver()
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
	c.metrics.InProgress(1)
	status, err := c.carryOut(ctx, taken, started, log)
	c.metrics.InProgress(-1)
	if ctx.Err() != nil {
		log.Info("restore left to whoever holds its Lease next", "cause", context.Cause(ctx))
		return nil
	}
	if err != nil {
		return fmt.Errorf("the cluster or the backup's location is unavailable: %w", err) // carried out again later
	}
	log.Info("restore ended", "phase", status.Phase)
	c.metrics.RestoreEnded(status.Phase, time.Since(started))
	kind := corev1.EventTypeNormal
	if status.Phase != velerov1.RestorePhaseCompleted {
		kind = corev1.EventTypeWarning
	}
	c.events.Eventf(taken, kind, string(status.Phase), "%s", endMessage(status))
	// Once it is recorded ended, this process stops standing for it: the write must not
	// be cut short by that.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	return c.velero.UpdateRestoreStatus(rctx, name, func(s *velerov1.RestoreStatus) {
		progress := s.Progress
		*s = status
		if s.Progress == nil {
			s.Progress = progress // a restore that failed before it ran keeps the progress it had
		}
	})
}

// dropLease deletes the Lease of Restore name once the Restore has ended and nobody
// holds the Lease: an ended Restore needs no election, and its Lease would stay until
// the Restore is deleted. A process that stands for the Restore meanwhile makes the
// Lease again when it next tries to take it, finds the Restore ended, and drops it in
// turn. A read or delete the API server does not answer is tried again, for half a
// minute.
func (c *Controller) dropLease(ctx context.Context, name string) {
	restores := c.velero.Dynamic.Resource(velero.RestoresResource).Namespace(c.velero.Namespace)
	leases := c.clients.CoordinationV1().Leases(c.velero.Namespace)
	backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 7, Cap: 8 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		r, err := restores.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return true, nil // its Lease goes with it
		case err != nil:
			return false, nil
		case !finished(r):
			return true, nil
		}
		l, err := leases.Get(ctx, "restoregraph-restore-"+name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return true, nil
		case err != nil:
			return false, nil
		case leaseHeld(l, time.Now()):
			return true, nil // whoever holds it drops it
		}
		err = leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion}})
		return err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err), nil
	})
	if err != nil {
		c.log.Debug("the ended restore's Lease is left", "restore", name, "error", err)
	}
}

// leaseSweep is how often a process looks for the Leases of ended Restores left behind.
const leaseSweep = 30 * time.Second

// sweepLeases deletes the Leases of ended Restores that nobody holds, or whose holder
// stopped renewing them: what a process killed between releasing a Lease and dropping
// it leaves. The Lease of a Restore that is gone goes with it (its owner).
func (c *Controller) sweepLeases(ctx context.Context) {
	leases := c.clients.CoordinationV1().Leases(c.velero.Namespace)
	list, err := leases.List(ctx, metav1.ListOptions{})
	if err != nil {
		c.log.Debug("the Leases of ended restores are not swept", "error", err)
		return
	}
	now := time.Now()
	for i := range list.Items {
		l := &list.Items[i]
		name, ok := strings.CutPrefix(l.Name, "restoregraph-restore-")
		if !ok || leaseHeld(l, now) {
			continue
		}
		obj, exists, _ := c.restores.GetByKey(c.velero.Namespace + "/" + name)
		if u, _ := obj.(*unstructured.Unstructured); !exists || u == nil || !finished(u) {
			continue
		}
		err := leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			c.log.Debug("the ended restore's Lease is left", "restore", name, "error", err)
		}
	}
}

// leaseHeld reports whether a process holds Lease l at now: it names a holder, and its
// last renewal has not expired.
func leaseHeld(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return false
	}
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return now.Before(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
}
