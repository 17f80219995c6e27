package restore

import (
	"context"
	"log/slog"
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

// testOptions is every option a test sets, in one literal; split sorts them into the
// Selection, Extensions and RunOptions they belong to.
type testOptions struct {
	// Selection
	Filter            filter.Spec
	NamespaceMappings map[string]string
	Priorities        versionselect.Priorities
	StrictVersions    bool
	RestoreStatus     *StatusSelection
	NonRestorable     []schema.GroupResource
	PreserveNodePorts bool
	Existing          Existing
	Disable           []string
	BackupName        string
	// Extensions
	Plugins   *plugin.Registry
	Readiness *readiness.Registry
	Rules     []graph.Rule
	Steps     func([]Step) []Step
	// RunOptions
	Name             string
	Workers          int
	ItemTimeout      time.Duration
	HealthTimeout    time.Duration
	Retry            wait.Backoff
	AdditionalItems  readiness.AdditionalItemsWaiter
	OperationTimeout time.Duration
	OperationPoll    wait.Backoff
	Journal          Journal
	Admitter         admission.Admitter
	OnAdmissionWait  func([]admission.Conflict)
	OnEvent          func(Event)
	Logger           *slog.Logger
	Clock            clock.Clock
}

func (o testOptions) split() (PlanOptions, RunOptions) {
	return PlanOptions{BackupName: o.BackupName,
			Selection: Selection{Filter: o.Filter, NamespaceMappings: o.NamespaceMappings, Priorities: o.Priorities, StrictVersions: o.StrictVersions,
				RestoreStatus: o.RestoreStatus, NonRestorable: o.NonRestorable, PreserveNodePorts: o.PreserveNodePorts, Existing: o.Existing, Disabled: DisabledByName(o.Disable...)},
			Extensions: Extensions{Plugins: o.Plugins, Readiness: o.Readiness, Rules: o.Rules, Steps: o.Steps}},
		RunOptions{Name: o.Name, Workers: o.Workers, ItemTimeout: o.ItemTimeout, HealthTimeout: o.HealthTimeout, Retry: o.Retry,
			AdditionalItems: o.AdditionalItems, ItemOperationTimeout: o.OperationTimeout, OperationPoll: o.OperationPoll, Journal: o.Journal, Admitter: o.Admitter, OnAdmissionWait: o.OnAdmissionWait,
			OnEvent: o.OnEvent, Logger: o.Logger, Clock: o.Clock}
}

// restoreAll plans and applies, as the CLI's restore does.
func restoreAll(ctx context.Context, target Target, backup Backup, o testOptions) (*Report, error) {
	po, ro := o.split()
	p, err := NewPlan(ctx, backup, target, po)
	if err != nil {
		return nil, err
	}
	return Apply(ctx, p, target, ro)
}

// planAll plans.
func planAll(ctx context.Context, target Target, backup Backup, o testOptions) (*Plan, error) {
	po, _ := o.split()
	return NewPlan(ctx, backup, target, po)
}

// verifyAll plans and verifies.
func verifyAll(ctx context.Context, target Target, backup Backup, o testOptions) (*VerifyReport, error) {
	po, ro := o.split()
	p, err := NewPlan(ctx, backup, target, po)
	if err != nil {
		return nil, err
	}
	return Verify(ctx, p, target, ro)
}
