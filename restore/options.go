package restore

import (
	"time"

	"github.com/restoregraph/restoregraph/admission"
	"github.com/restoregraph/restoregraph/filter"
	"github.com/restoregraph/restoregraph/graph"
	"github.com/restoregraph/restoregraph/plugin"
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
	// Update replaces the existing object with the backup's.
	Update Existing = "update"
	// Fail fails the object, and so skips its dependents.
	Fail Existing = "fail"
)

// Options tune Run and Plan. The zero value restores with defaults.
type Options struct {
	// Workers bounds the objects restored at once; default 16.
	Workers int
	// Plugins run on each object they apply to; nil for none.
	Plugins *plugin.Registry
	// Priorities are the user's version priorities; Strict fails planning when a
	// group-resource shares no version with the target.
	Priorities     versionselect.Priorities
	StrictVersions bool
	// Readiness judges objects; default readiness.NewRegistry(readiness.ReadyOnCreate).
	Readiness *readiness.Registry
	// ItemTimeout bounds each object: create, retries, readiness; default 5 minutes.
	ItemTimeout time.Duration
	// Existing is the policy for objects that already exist; default Adopt.
	Existing Existing
	// Journal, when set, records how each object ended and says what an earlier run
	// restored, so that a stopped restore continues (OpenJournal for a file).
	Journal Journal
	// HealthTimeout, when set, waits after the restore until everything restored is
	// healthy (kstatus Current: a Deployment available, a Pod running, a claim bound), at
	// most that long, and reports it in Report.Health. Health never gates: dependents
	// start as soon as what they need exists.
	HealthTimeout time.Duration
	// KeepStatus lists the group-resources whose status is restored.
	KeepStatus map[schema.GroupResource]bool
	// Rules add optional ordering edges to the graph (graph.ClusterAPI, or your own).
	Rules []graph.Rule
	// AdditionalItems waits for plugins' additional items (timeout, strictness).
	AdditionalItems readiness.AdditionalItemsWaiter
	// Name is the restore's name, given to plugins and put on every restored object
	// (RestoreNameLabel); default <BackupName or "restore">-<time of the restore>.
	Name string
	// BackupName is the backup's name, given to plugins and put on every restored object
	// (BackupNameLabel) when set.
	BackupName string
	// OnEvent receives progress events, in order, from one goroutine.
	OnEvent func(Event)
	// Retry spaces retries of transient errors (connection failures, timeouts, 429, 5xx);
	// default 100ms doubling to 5s, each wait jittered by up to 20%. Retries go on at the
	// Cap for as long as the object's ItemTimeout allows; without a Cap, Steps bounds them.
	Retry wait.Backoff
	// Clock stamps the report and drives readiness waits; default the real clock.
	Clock clock.Clock
	// Filter selects what is restored, as Velero's restore options do; the zero value
	// restores everything. Resource names resolve against the backup and the target.
	Filter filter.Spec
	// NamespaceMappings restores the objects of namespace src into dst: the Namespace
	// itself, every object in it, and the subjects of role bindings naming it.
	NamespaceMappings map[string]string
	// PreserveNodePorts keeps Services' node ports (the built-in Service action clears
	// them otherwise), as Velero's --preserve-nodeports.
	PreserveNodePorts bool
	// NonRestorable are the resources left out, reported as Skipped with the reason;
	// nil means DefaultNonRestorable, an empty slice none.
	NonRestorable []schema.GroupResource
	// DisablePlugins names built-in actions and plan rules to switch off:
	// "restoregraph.dev/service", ControllerManaged, ... (package plugin/builtin).
	DisablePlugins []string
	// Admitter, when set, admits the restore before it writes anything: it waits while
	// an earlier operation touches what it writes (package admission). OnAdmissionWait
	// is told whom it waits for. A restore whose admission is lost while it runs stops,
	// with an error that wraps admission.ErrLost.
	Admitter        admission.Admitter
	OnAdmissionWait func([]admission.Conflict)
	// Steps, when set, is given the default pipeline (DefaultStepNames in order) and
	// returns the one to run: steps added, wrapped, replaced or removed.
	Steps func([]Step) []Step
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = 16
	}
	if o.Readiness == nil {
		o.Readiness = readiness.NewRegistry(readiness.ReadyOnCreate)
	}
	if o.ItemTimeout <= 0 {
		o.ItemTimeout = 5 * time.Minute
	}
	if o.Existing == "" {
		o.Existing = Adopt
	}
	if o.Retry.Duration == 0 {
		o.Retry = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.2, Cap: 5 * time.Second, Steps: 1 << 30}
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Name == "" {
		prefix := o.BackupName
		if prefix == "" {
			prefix = "restore"
		}
		o.Name = prefix + "-" + o.Clock.Now().UTC().Format("20060102150405")
	}
	if o.NonRestorable == nil {
		o.NonRestorable = DefaultNonRestorable
	}
	if o.AdditionalItems.Clock == nil {
		o.AdditionalItems.Clock = o.Clock
	}
	return o
}
