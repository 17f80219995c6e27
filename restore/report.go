package restore

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"iter"
	"strings"
	"time"

	"github.com/google/uuid"
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
	// Volume is how the data of a PersistentVolume, or of a claim's volume, came back;
	// VolumeFileSystem for a Pod whose volumes were filled.
	Volume VolumeMethod `json:"volume,omitempty"`
	// Reason says why an object failed or was skipped; Err is the same as an error to
	// inspect with errors.Is and errors.As (see ErrBlocked for the kinds).
	Reason string `json:"reason,omitempty"`
	Err    error  `json:"-"`
	// BlockedBy is the chain from the failed object to this skipped one, by source UID.
	BlockedBy []types.UID `json:"blockedBy,omitempty"`
	// SkippedBy names the plugin that asked for the object to be left out.
	SkippedBy string   `json:"skippedBy,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
	// FromJournal: the journal of an earlier run says the object was restored then.
	FromJournal bool `json:"fromJournal,omitempty"`
	Retries     int  `json:"retries,omitempty"`
	// Modifiers are the resource modifier rules that changed the object, by their index
	// in Selection.Modifiers.
	Modifiers []int `json:"modifiers,omitempty"`
	// Operations are the asynchronous operations plugins started on the object, as
	// they ended.
	Operations []Operation `json:"operations,omitempty"`
	// Hooks are the exec hooks run in a Pod, and how each ended.
	Hooks []HookResult `json:"hooks,omitempty"`

	// Started is when the object's dependencies were done and its restore began;
	// Created when it was created (or found); Ready when it became ready. Waited is the
	// time spent waiting for plugins' additional items.
	Started time.Time     `json:"started,omitzero"`
	Created time.Time     `json:"created,omitzero"`
	Ready   time.Time     `json:"ready,omitzero"`
	Ended   time.Time     `json:"ended,omitzero"`
	Waited  time.Duration `json:"waited,omitempty"`
}

// Report is what a restore did. Objects yields each object's result; the report keeps
// them compactly (72 bytes each, a fifth of an ObjectResult: a restore may have a
// million), with the plan that names them, which it keeps alive.
type Report struct {
	Summary  map[Status]int `json:"summary"`
	Warnings []string       `json:"warnings,omitempty"`
	// Health is what the wait for health found, when RunOptions.HealthTimeout asked for it.
	Health   *HealthReport `json:"health,omitempty"`
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished"`

	plan     *Plan
	outcomes []outcome // by node; barriers' are empty
}

// Count returns the number of objects that ended with s.
func (r *Report) Count(s Status) int { return r.Summary[s] }

// Len returns the number of objects the report covers: every object of the plan.
func (r *Report) Len() int {
	if r.plan == nil {
		return 0
	}
	return r.plan.Len()
}

// Objects iterates the objects' results, in the plan's node order. Each ObjectResult
// is made as it is yielded.
func (r *Report) Objects() iter.Seq[ObjectResult] { return r.objects(false) }

// Unusual iterates, as Objects does, the results of the objects that were not simply
// restored: those that ended otherwise than Restored, and those restored with a reason,
// warnings, modifiers, operations or hooks. Of a million objects restored it makes no
// result: a report that lists only these need not make a million.
func (r *Report) Unusual() iter.Seq[ObjectResult] { return r.objects(true) }

func (r *Report) objects(unusual bool) iter.Seq[ObjectResult] {
	return func(yield func(ObjectResult) bool) {
		for id := range r.outcomes {
			if o := &r.outcomes[id]; unusual && o.Status() == Restored && o.more == nil {
				continue
			}
			it := r.plan.item(int64(id))
			if it == nil {
				continue
			}
			ref := refOf(it, versionOf(r.plan.versions, it), r.plan.sel.NamespaceMappings)
			res := r.outcomes[id].result(ref)
			res.Volume = r.plan.volumeOf(r.plan.graph.NodeAt(int64(id)).Item)
			if !yield(res) {
				return
			}
		}
	}
}

// MarshalJSON writes the report with its objects, listed as Objects yields them.
func (r *Report) MarshalJSON() ([]byte, error) {
	type fields Report // the fields without this method
	return json.Marshal(struct {
		*fields
		Objects jsonSeq[ObjectResult] `json:"objects"`
	}{(*fields)(r), jsonSeq[ObjectResult](r.Objects())})
}

// OK reports whether every object was restored, adopted or updated, or skipped by a
// plugin's or the plan's choice, and, when health was waited for, is healthy.
func (r *Report) OK() bool {
	healthy := r.Health == nil || len(r.Health.NotHealthy) == 0
	return healthy && r.Summary[Failed] == 0 && r.Summary[Cancelled] == 0 && r.Summary[Skipped] == r.pluginSkips()
}

func (r *Report) pluginSkips() int {
	n := 0
	for _, o := range r.outcomes {
		if o.Status() == Skipped && o.more != nil && o.more.skippedBy != "" {
			n++
		}
	}
	return n
}

// outcome is how one object's restore ended, as a run keeps it: an ObjectResult without
// what the plan knows (which object, at which version), its times as Unix nanoseconds (0
// when not reached), its new UID as the 16 bytes of the server's UUID, and what few
// objects have apart. 72 bytes.
type outcome struct {
	newUID                         uuid.UUID
	started, created, ready, ended int64
	waited                         time.Duration
	retries                        int32
	status                         uint8 // an index into statuses
	fromJournal                    bool
	more                           *outcomeMore
}

// outcomeMore is what an object that failed, was skipped or has warnings also has, and
// what does not fit the outcome's bytes: a new UID that is not a UUID, a status of a
// caller's step that is not one of the package's.
type outcomeMore struct {
	reason, skippedBy string
	err               error
	blockedBy         []types.UID
	warnings          []string
	modifiers         []int
	operations        []Operation
	hooks             []HookResult
	newUID            types.UID
	status            Status
	// targetName is the name the object was made under, where a plugin named it anew
	// (or a mapping renamed a Namespace).
	targetName string
}

// statuses are the outcome's status bytes; 0 is none yet.
var statuses = [...]Status{"", Restored, Adopted, Updated, Skipped, Failed, Cancelled}

// detail returns o's rarer part, made when first needed.
func (o *outcome) detail() *outcomeMore {
	if o.more == nil {
		o.more = &outcomeMore{}
	}
	return o.more
}

// setStatus records s.
func (o *outcome) setStatus(s Status) {
	for i, known := range statuses {
		if known == s {
			o.status = uint8(i)
			if o.more != nil {
				o.more.status = ""
			}
			return
		}
	}
	o.status, o.detail().status = 0, s
}

// Status returns what setStatus recorded.
func (o *outcome) Status() Status {
	if o.more != nil && o.more.status != "" {
		return o.more.status
	}
	return statuses[o.status]
}

// setNewUID records uid: as 16 bytes when it is a UUID that reads back the same.
func (o *outcome) setNewUID(uid types.UID) {
	if u, ok := canonicalUUID(string(uid)); ok {
		o.newUID = u
		if o.more != nil {
			o.more.newUID = ""
		}
		return
	}
	o.newUID = uuid.Nil
	if uid != "" || o.more != nil {
		o.detail().newUID = uid
	}
}

// canonicalUUID parses s when it is a UUID as UUID.String writes it (36 bytes, lower
// case), which the outcome then gives back as it was, without writing it to compare.
func canonicalUUID(s string) (uuid.UUID, bool) {
	if len(s) != 36 || strings.ContainsAny(s, "ABCDEF") {
		return uuid.Nil, false
	}
	u, err := uuid.Parse(s)
	return u, err == nil
}

// NewUID returns what setNewUID recorded.
func (o *outcome) NewUID() types.UID {
	if o.more != nil && o.more.newUID != "" {
		return o.more.newUID
	}
	if o.newUID == uuid.Nil {
		return ""
	}
	return types.UID(o.newUID.String())
}

// outcomeOf keeps res.
func outcomeOf(res *ObjectResult) outcome {
	o := outcome{started: unixNano(res.Started), created: unixNano(res.Created), ready: unixNano(res.Ready), ended: unixNano(res.Ended),
		waited: res.Waited, retries: int32(res.Retries), fromJournal: res.FromJournal}
	if res.Reason != "" || res.Err != nil || res.SkippedBy != "" || len(res.BlockedBy) > 0 || len(res.Warnings) > 0 || len(res.Modifiers) > 0 ||
		len(res.Operations) > 0 || len(res.Hooks) > 0 || res.TargetName != "" {
		o.more = &outcomeMore{reason: res.Reason, err: res.Err, skippedBy: res.SkippedBy, blockedBy: res.BlockedBy, warnings: res.Warnings,
			modifiers: res.Modifiers, operations: res.Operations, hooks: res.Hooks, targetName: res.TargetName}
	}
	o.setStatus(res.Status)
	o.setNewUID(res.NewUID)
	return o
}

// result is the report's line for o, the object ref names.
func (o *outcome) result(ref ObjectRef) ObjectResult {
	res := ObjectResult{ObjectRef: ref, NewUID: o.NewUID(), Status: o.Status(), FromJournal: o.fromJournal, Retries: int(o.retries),
		Started: fromUnixNano(o.started), Created: fromUnixNano(o.created), Ready: fromUnixNano(o.ready), Ended: fromUnixNano(o.ended),
		Waited: o.waited}
	if m := o.more; m != nil {
		res.Reason, res.Err, res.SkippedBy, res.BlockedBy, res.Warnings = m.reason, m.err, m.skippedBy, m.blockedBy, m.warnings
		res.Modifiers, res.Operations, res.Hooks = m.modifiers, m.operations, m.hooks
		if m.targetName != "" {
			res.TargetName = m.targetName
		}
		if res.Reason == "" && m.err != nil {
			res.Reason = m.err.Error()
		}
	}
	return res
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// WriteJSON writes the report's JSON to w, indented, as json.MarshalIndent would, but
// encodes and writes its objects one at a time: the JSON of a million objects is never
// in memory whole.
func (r *Report) WriteJSON(w io.Writer) error {
	type fields Report // the fields without MarshalJSON
	return writeJSON(w, (*fields)(r), r.Objects())
}

// writeJSON writes fields, an object, with objects as its last field, "objects",
// indented by two spaces and followed by a newline.
func writeJSON[T any](w io.Writer, fields any, objects iter.Seq[T]) error {
	head, err := json.MarshalIndent(fields, "", "  ")
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	head = bytes.TrimRight(bytes.TrimSuffix(head, []byte("}")), "\n")
	bw.Write(head)
	if len(head) > 1 {
		bw.WriteString(",")
	}
	bw.WriteString("\n  \"objects\": [")
	n := 0
	for o := range objects {
		b, err := json.MarshalIndent(o, "    ", "  ")
		if err != nil {
			return err
		}
		if n++; n > 1 {
			bw.WriteString(",")
		}
		bw.WriteString("\n    ")
		bw.Write(b)
	}
	if n > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]\n}\n")
	return bw.Flush()
}

// jsonSeq is a sequence written as a JSON array, one element at a time.
type jsonSeq[T any] iter.Seq[T]

func (s jsonSeq[T]) MarshalJSON() ([]byte, error) {
	out := []byte{'['}
	for v := range s {
		if len(out) > 1 {
			out = append(out, ',')
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return append(out, ']'), nil
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
