package restore

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/graph"
	"github.com/restoregraph/restoregraph/hook"
	"github.com/restoregraph/restoregraph/modifier"
	"github.com/restoregraph/restoregraph/plugin"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
	"github.com/restoregraph/restoregraph/readiness"
	"github.com/restoregraph/restoregraph/versionselect"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// SourceUIDAnnotation marks every object a restore creates with the UID the object had
// in the backup.
const SourceUIDAnnotation = "restoregraph.dev/source-uid"

// Existing says what to do with an object that already exists in the target.
type Existing string

const (
	// Adopt leaves the existing object as it is and takes its UID for the dependents'
	// owner references. The default.
	Adopt Existing = "adopt"
	// Update replaces the existing object with the backup's. One the target refuses
	// to change so (Invalid: a Pod's spec beyond its images) is adopted instead, with
	// only its labels updated and the refusal as a warning, as Velero leaves it.
	Update Existing = "update"
	// Fail fails the object, and so skips its dependents.
	Fail Existing = "fail"
)

// ParseExisting reads a policy by its name, or by Velero's: "none" is Adopt (Velero
// leaves the existing object as it is), "update" Update. "" is the default, Adopt.
func ParseExisting(name string) (Existing, error) {
	switch Existing(name) {
	case "", Adopt, "none":
		return Adopt, nil
	case Update, Fail:
		return Existing(name), nil
	}
	return "", fmt.Errorf("existing-object policy %q: want adopt (Velero's none), update or fail", name)
}

// PlanOptions say what NewPlan plans: which backup it is (its name and where it is
// kept, recorded in the plan), what to restore of it, and with what extensions. The
// zero value plans a restore of everything with the defaults.
type PlanOptions struct {
	// BackupName is the backup's name, given to plugins and put on every restored object
	// (BackupNameLabel) when set; BackupLocation where the backup is kept (a path or a
	// URL), so that a saved plan names it.
	BackupName, BackupLocation string
	Selection                  Selection
	Extensions                 Extensions
	// Volumes is what the backup's records say of its PersistentVolumes' data (Velero's
	// volume information): how each comes back is decided from it, as Velero decides.
	// A PersistentVolume it does not name comes back by its reclaim policy
	// (VolumeProvisioned or VolumeAsIs).
	Volumes []Volume
}

// Selection says what a restore makes of a backup, as Velero's Restore spec does. It is
// part of the plan: a saved plan records it, and a plan read back is made again with it.
// The zero value restores everything the target can take.
type Selection struct {
	// Filter selects what is restored, as Velero's restore options do; the zero value
	// restores everything. Resource names resolve against the backup and the target.
	Filter filter.Spec
	// NamespaceMappings restores the objects of namespace src into dst: the Namespace
	// itself, every object in it, and the subjects of role bindings naming it.
	NamespaceMappings map[string]string
	// Priorities are the user's version priorities; StrictVersions fails planning when a
	// group-resource shares no version with the target.
	Priorities     versionselect.Priorities
	StrictVersions bool
	// RestoreStatus says which resources' status is restored, as Velero's restoreStatus;
	// nil restores none. An object's velero.io/restore-status annotation ("true" or
	// "false") overrides it for that object, as in Velero.
	RestoreStatus *StatusSelection
	// NonRestorable are the resources left out, reported as Skipped with the reason;
	// nil means DefaultNonRestorable, an empty slice none.
	NonRestorable []schema.GroupResource
	// PreserveNodePorts keeps Services' node ports (the built-in Service action clears
	// them otherwise), as Velero's --preserve-nodeports.
	PreserveNodePorts bool
	// Existing is the policy for objects that already exist; default Adopt.
	Existing Existing
	// Modifiers change objects as they are restored (StepModify): Velero's resource
	// modifiers, read with modifier.Parse or modifier.FromConfigMap. The plan shows the
	// rules that apply to each object; a rule that fails on an object fails it.
	Modifiers *modifier.Modifiers
	// Hooks are Velero's restore hooks, as a Restore's spec.hooks gives them: init
	// containers added to Pods, commands run in them once restored (run through
	// Target.Exec). A Pod's own hook annotations apply without them.
	Hooks *hook.Spec
	// Order is the user's order between kinds (ParseOrder, LoadOrder): the objects of
	// one kind start once those of another are healthy.
	Order *Order
	// Disabled switches off, by name, what a restore does by default: actions, plugins,
	// plan rules, the managed fields' patch.
	Disabled Disabled
	// RestorePVs is Velero's restorePVs: false restores no volume's data (a native
	// snapshot's PersistentVolume is restored as it was, a CSI snapshot's claim is
	// provisioned again empty); nil or true restores it as the backup's volume
	// information says.
	RestorePVs *bool
}

// Extensions are what a caller adds to the restore: code, so not part of a saved plan;
// a plan read back is given them again. The zero value adds nothing.
type Extensions struct {
	// Plugins run on each object they apply to, after the built-in actions.
	Plugins *plugin.Registry
	// Readiness judges objects; default readiness.NewRegistry(readiness.ReadyOnCreate).
	Readiness *readiness.Registry
	// Rules add optional ordering edges to the graph (graph.ClusterAPI, or your own).
	Rules []graph.Rule
	// Steps, when set, is given the default pipeline (DefaultStepNames in order) and
	// returns the one to run: steps added, wrapped, replaced or removed. Verify runs the
	// same pipeline, up to StepCreate.
	Steps func([]Step) []Step
	// VolumeSnapshotters make volumes of native snapshots, by the name of the
	// VolumeSnapshotLocation a snapshot was made through (NativeSnapshot.Location).
	VolumeSnapshotters map[string]VolumeSnapshotter
	// PodVolumes fills the volumes of restored Pods from a file-system backup of them;
	// without it a plan whose volumes need it is refused, naming them.
	PodVolumes PodVolumeRestorer
}

// RunOptions say how Apply (and Verify) run a plan. The zero value runs with the
// defaults.
type RunOptions struct {
	// Name is the restore's name, given to plugins and put on every restored object
	// (RestoreNameLabel); default <backup name or "restore">-<time of the restore>.
	Name string
	// Request is what plugins are told of the restore beyond its name and backup's
	// (Velero's Restore: its namespace, UID and spec, which Velero's own actions read);
	// its Name and Backup are filled in from Name and the plan when empty.
	Request *ria.Restore
	// Workers bounds the objects restored at once; default 16.
	Workers int
	// ItemTimeout bounds each object: create, retries, readiness, plugins' calls;
	// default 5 minutes.
	ItemTimeout time.Duration
	// HealthTimeout, when set, waits after the restore until everything restored is
	// healthy (kstatus Current: a Deployment available, a Pod running, a claim bound), at
	// most that long, and reports it in Report.Health. Health never gates: dependents
	// start as soon as what they need exists.
	HealthTimeout time.Duration
	// Retry spaces retries of transient errors (connection failures, timeouts, 429, 5xx);
	// default 100ms doubling to 5s, each wait jittered by up to 20%. Retries go on at the
	// Cap for as long as the object's ItemTimeout allows; without a Cap, Steps bounds them.
	Retry wait.Backoff
	// ItemOperationTimeout bounds each asynchronous operation a plugin starts, from when
	// its Execute returned: one that outlasts it is cancelled and fails its object, as
	// Velero's itemOperationTimeout; default 4 hours, Velero's. OperationPoll spaces
	// the calls to the plugin's Progress, and the looks at a Pod whose exec hooks wait
	// for its containers; default 1s doubling to 10s, jittered.
	ItemOperationTimeout time.Duration
	OperationPoll        wait.Backoff
	// AdditionalItems waits for plugins' additional items (timeout, strictness).
	AdditionalItems readiness.AdditionalItemsWaiter
	// Journal, when set, records how each object ended and says what an earlier run
	// restored, so that a stopped restore continues (OpenJournal for a file).
	Journal Journal
	// Admitter, when set, admits the restore before it writes anything: it waits while
	// an earlier operation touches what it writes (package admission). OnAdmissionWait
	// is told whom it waits for. A restore whose admission is lost while it runs stops,
	// with an error that wraps admission.ErrLost.
	Admitter        admission.Admitter
	OnAdmissionWait func([]admission.Conflict)
	// OnEvent receives progress events, in order, from one goroutine.
	OnEvent func(Event)
	// Logger receives the run's structured records: the run's start and end at Info,
	// each object that fails at Warn, each object's end and each retry at Debug. Secrets'
	// values never reach it. Default: none.
	Logger *slog.Logger
	// Clock stamps the report and drives readiness waits; default the real clock.
	Clock clock.Clock

	// inspect, for this package's tests, sees each object once its steps have run.
	inspect func(*Object)
}

func (s Selection) withDefaults() Selection {
	if s.Existing == "" {
		s.Existing = Adopt
	}
	if s.NonRestorable == nil {
		s.NonRestorable = DefaultNonRestorable
	}
	return s
}

func (e Extensions) withDefaults() Extensions {
	if e.Readiness == nil {
		e.Readiness = readiness.NewRegistry(readiness.ReadyOnCreate)
	}
	return e
}

// withDefaults fills in o's defaults; the restore's default name is made from backup's.
func (o RunOptions) withDefaults(backup string) RunOptions {
	if o.Workers <= 0 {
		o.Workers = 16
	}
	if o.ItemTimeout <= 0 {
		o.ItemTimeout = 5 * time.Minute
	}
	if o.Retry.Duration == 0 {
		o.Retry = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.2, Cap: 5 * time.Second, Steps: 1 << 30}
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.ItemOperationTimeout <= 0 {
		o.ItemOperationTimeout = 4 * time.Hour
	}
	if o.OperationPoll.Duration == 0 {
		o.OperationPoll = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Cap: 10 * time.Second, Steps: 1 << 30}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Name == "" {
		prefix := backup
		if prefix == "" {
			prefix = "restore"
		}
		o.Name = prefix + "-" + o.Clock.Now().UTC().Format("20060102150405")
	}
	if o.AdditionalItems.Clock == nil {
		o.AdditionalItems.Clock = o.Clock
	}
	return o
}
