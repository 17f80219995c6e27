package restore

import (
	"context"
	"time"

	"github.com/restoregraph/restoregraph/readiness"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// HealthReport is what the wait for health found, object by object: the part of a
// report that says whether what was restored also works.
type HealthReport struct {
	Timeout time.Duration `json:"timeout"`
	Healthy int           `json:"healthy"`
	// NotHealthy lists the objects that were not Current (kstatus) when the wait ended.
	NotHealthy []HealthResult `json:"notHealthy"`
}

// HealthResult is one object that did not become healthy, and kstatus' last word.
type HealthResult struct {
	ObjectRef
	Status string `json:"status"`
}

// waitHealthy waits, after the restore, until every object it restored, adopted or
// updated is Current by kstatus, or the timeout passes. It never gates anything: the
// objects are all made by then.
func (r *run) waitHealthy(ctx context.Context, rep *Report) *HealthReport {
	hr := &HealthReport{Timeout: r.opts.HealthTimeout, NotHealthy: []HealthResult{}}
	ctx, cancel := context.WithTimeout(ctx, r.opts.HealthTimeout)
	defer cancel()
	waiter := &readiness.Waiter{Client: r.target.Dynamic, Registry: readiness.NewHealth(), Clock: r.opts.Clock}
	results := make([]*HealthResult, len(rep.Objects))
	var g errgroup.Group
	g.SetLimit(r.opts.Workers)
	for i, o := range rep.Objects {
		if o.Status != Restored && o.Status != Adopted && o.Status != Updated {
			continue
		}
		g.Go(func() error {
			gvr := schema.GroupVersionResource{Group: o.Group, Version: o.Version, Resource: o.Resource}
			ns, name := o.InTarget()
			last, err := waiter.Wait(ctx, gvr, ns, name, r.opts.HealthTimeout)
			if err != nil {
				results[i] = &HealthResult{ObjectRef: o.ObjectRef, Status: last.Reason}
			}
			return nil
		})
	}
	g.Wait()
	for i, res := range results {
		switch {
		case res != nil:
			hr.NotHealthy = append(hr.NotHealthy, *res)
		case rep.Objects[i].Status == Restored || rep.Objects[i].Status == Adopted || rep.Objects[i].Status == Updated:
			hr.Healthy++
		}
	}
	return hr
}
