package restore

import (
	"time"

	"github.com/restoregraph/restoregraph/manifest"
	"github.com/restoregraph/restoregraph/scheduler"
	"k8s.io/apimachinery/pkg/types"
)

// Status is how an object's restore ended.
type Status string

const (
	Restored Status = "Restored" // created by this restore (or by an earlier attempt of it)
	Adopted  Status = "Adopted"  // it existed already and was left as it was
	Updated  Status = "Updated"  // it existed already and was replaced
	Skipped  Status = "Skipped"  // not restored: a dependency failed, a cycle, or a plugin
	Failed   Status = "Failed"
	// Cancelled: the restore stopped before the object was started.
	Cancelled Status = "Cancelled"
)

// ObjectResult is how one object's restore ended.
type ObjectResult struct {
	ObjectRef
	NewUID types.UID `json:"newUID,omitempty"`
	Status Status    `json:"status"`
	// Reason says why an object failed or was skipped.
	Reason string `json:"reason,omitempty"`
	// BlockedBy is the chain from the failed object to this skipped one, by source UID.
	BlockedBy []types.UID `json:"blockedBy,omitempty"`
	// SkippedBy names the plugin that asked for the object to be left out.
	SkippedBy string   `json:"skippedBy,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
	// FromJournal: the journal of an earlier run says the object was restored then.
	FromJournal bool `json:"fromJournal,omitempty"`
	Retries     int  `json:"retries,omitempty"`

	// Started is when the object's dependencies were done and its restore began;
	// Created when it was created (or found); Ready when it became ready. Waited is the
	// time spent waiting for plugins' additional items.
	Started time.Time     `json:"started,omitzero"`
	Created time.Time     `json:"created,omitzero"`
	Ready   time.Time     `json:"ready,omitzero"`
	Ended   time.Time     `json:"ended,omitzero"`
	Waited  time.Duration `json:"waited,omitempty"`
}

// Report is what a restore did.
type Report struct {
	Objects  []ObjectResult `json:"objects"`
	Summary  map[Status]int `json:"summary"`
	Warnings []string       `json:"warnings,omitempty"`
	// Health is what the wait for health found, when Options.HealthTimeout asked for it.
	Health   *HealthReport `json:"health,omitempty"`
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished"`
}

// Count returns the number of objects that ended with s.
func (r *Report) Count(s Status) int { return r.Summary[s] }

// OK reports whether every object was restored, adopted or updated, or skipped by a
// plugin's or the plan's choice, and, when health was waited for, is healthy.
func (r *Report) OK() bool {
	healthy := r.Health == nil || len(r.Health.NotHealthy) == 0
	return healthy && r.Summary[Failed] == 0 && r.Summary[Cancelled] == 0 && r.Summary[Skipped] == r.pluginSkips()
}

func (r *Report) pluginSkips() int {
	n := 0
	for _, o := range r.Objects {
		if o.Status == Skipped && o.SkippedBy != "" {
			n++
		}
	}
	return n
}

// EventType says what happened to an object.
type EventType string

const (
	EventStarted EventType = "Started" // its dependencies are done and a worker took it
	// EventWaiting: it waits for objects a plugin asked for, and gave up its worker.
	EventWaiting   EventType = "Waiting"
	EventResumed   EventType = "Resumed" // back from waiting, with a worker
	EventSucceeded EventType = "Succeeded"
	EventFailed    EventType = "Failed"
	EventSkipped   EventType = "Skipped"
	EventCancelled EventType = "Cancelled"
)

var eventTypes = map[scheduler.EventType]EventType{
	scheduler.Started: EventStarted, scheduler.Waiting: EventWaiting, scheduler.Resumed: EventResumed,
	scheduler.SucceededEvent: EventSucceeded, scheduler.FailedEvent: EventFailed,
	scheduler.SkippedEvent: EventSkipped, scheduler.CancelledEvent: EventCancelled,
}

// Event is a step of the restore, for progress bars and timelines.
type Event struct {
	Type EventType
	// Item is the object; nil for the barrier nodes of rules.
	Item   *manifest.Item
	Time   time.Time
	Worker int
	// Err is why the object failed, was skipped or was cancelled.
	Err error
}

func newEvent(ev scheduler.Event, it *manifest.Item) Event {
	return Event{Type: eventTypes[ev.Type], Item: it, Time: ev.Time, Worker: ev.Worker, Err: ev.Err}
}
