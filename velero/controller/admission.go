package controller

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/velero"
)

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
func (c *Controller) awaitEarlier(ctx context.Context, name string) bool {
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
func (c *Controller) markAdmission(ctx context.Context, o *unstructured.Unstructured, state string) {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AdmissionAnnotation: state}}})
	_, err := c.velero.Dynamic.Resource(velero.RestoresResource).Namespace(c.velero.Namespace).Patch(ctx, o.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
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
	c   *Controller
	o   *unstructured.Unstructured
	log *slog.Logger
}

func (a restoreAdmitter) Admit(ctx context.Context, op admission.Operation) (func(), error) {
	m := a.c.metrics
	var waitingSince time.Time
	op.OnWait = func(cs []admission.Conflict) {
		waitingSince = time.Now()
		m.Waiting(WaitAdmission, 1)
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
		m.Waiting(WaitAdmission, -1)
		m.AdmissionWaited(time.Since(waitingSince))
	}
	if err == nil {
		a.c.markAdmission(ctx, a.o, "admitted")
	}
	return release, err
}
