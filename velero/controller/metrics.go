package controller

import (
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/restoregraph/restoregraph/restore"
)

// Wait is what a Restore this process holds waits for.
type Wait string

// What a Restore waits for, in the order it meets them.
const (
	// WaitEarlier: a Restore created before it has not entered admission yet.
	WaitEarlier Wait = "earlier"
	// WaitSlot: this process carries out Config.Restores already.
	WaitSlot Wait = "slot"
	// WaitAdmission: an operation that touches the same objects runs.
	WaitAdmission Wait = "admission"
)

// Metrics is told what the controller does, as it does it; package metrics tells
// Prometheus. Its methods are called from many goroutines and must not block.
type Metrics interface {
	// InProgress: a Restore this process carries out started (+1) or stopped (-1).
	InProgress(delta int)
	// Waiting: a Restore this process holds started (+1) or stopped (-1) waiting for w.
	Waiting(w Wait, delta int)
	// AdmissionWaited: a Restore waited for admission this long, and was admitted or
	// gave up.
	AdmissionWaited(d time.Duration)
	// TakenOver: a Restore was taken over from a process that stopped holding its Lease.
	TakenOver()
	// RestoreEnded: a Restore this process carried out ended in phase, took after it
	// started (a Restore taken over counts from its first start).
	RestoreEnded(phase velerov1.RestorePhase, took time.Duration)
	// ObjectEnded: an object of such a Restore ended so.
	ObjectEnded(resource schema.GroupResource, status restore.Status)
}

// nopMetrics tells nobody.
type nopMetrics struct{}

func (nopMetrics) InProgress(int)                                    {}
func (nopMetrics) Waiting(Wait, int)                                 {}
func (nopMetrics) AdmissionWaited(time.Duration)                     {}
func (nopMetrics) TakenOver()                                        {}
func (nopMetrics) RestoreEnded(velerov1.RestorePhase, time.Duration) {}
func (nopMetrics) ObjectEnded(schema.GroupResource, restore.Status)  {}

var _ Metrics = nopMetrics{}
