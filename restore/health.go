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
	made := func(s Status) bool { return s == Restored || s == Adopted || s == Updated }
	// By object waited for, in report order; never grown past its capacity, so that each
	// goroutine's element stays where it is.
	results := make([]*HealthResult, 0, rep.Len())
	var g errgroup.Group
	g.SetLimit(r.opts.Workers)
	for o := range rep.Objects() {
		if !made(o.Status) {
			continue
		}
		results = append(results, nil)
		res := &results[len(results)-1]
		g.Go(func() error {
			gvr := schema.GroupVersionResource{Group: o.Group, Version: o.Version, Resource: o.Resource}
			ns, name := o.InTarget()
			last, err := waiter.Wait(ctx, gvr, ns, name, r.opts.HealthTimeout)
			if err != nil {
				*res = &HealthResult{ObjectRef: o.ObjectRef, Status: last.Reason}
			}
			return nil
		})
	}
	g.Wait()
	for _, res := range results {
		if res != nil {
			hr.NotHealthy = append(hr.NotHealthy, *res)
		} else {
			hr.Healthy++
		}
	}
	return hr
}
