package restore

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/restoregraph/restoregraph/admission"
	ria "github.com/restoregraph/restoregraph/plugin/restoreitemaction"
)

// WriteText writes the plan as a person reads it: its versions and why each was
// chosen, every object with its level and what it waits for (and why), the plugins, the
// operations it would wait for (conflicts, from Plan.Conflicts), the critical path,
// cycles and warnings.
func (p *Plan) WriteText(out io.Writer, conflicts []admission.Conflict) error {
	w := bufio.NewWriterSize(out, 256<<10) // a line per object: a million lines, not a million writes
	fmt.Fprintf(w, "%d objects, %d resource types\n\nVersions:\n", p.Len(), len(p.Versions))
	for _, v := range p.Versions {
		gr := v.Resource
		if v.Group != "" {
			gr += "." + v.Group
		}
		fmt.Fprintf(w, "  %-50s %-10s %s\n", gr, v.Version, v.Explanation)
	}
	fmt.Fprintf(w, "\nOrder (level: object <- dependencies):\n")
	name := func(uid types.UID) string {
		o, ok := p.Object(uid)
		if !ok {
			return ""
		}
		return o.Kind + " " + qualifiedName(o.Namespace, o.Name)
	}
	for o := range p.Objects() {
		var deps []string
		for _, d := range o.DependsOn {
			deps = append(deps, fmt.Sprintf("%s (%s)", name(d.UID), d.Reason))
		}
		fmt.Fprintf(w, "  %3d: %s %s", o.Level, o.Kind, qualifiedName(o.Namespace, o.Name))
		if len(deps) > 0 {
			fmt.Fprintf(w, " <- %s", strings.Join(deps, ", "))
		}
		if len(o.Folded) > 0 {
			fmt.Fprintf(w, " (also listed as %s: restored once)", strings.Join(o.Folded, ", "))
		}
		if o.Excluded != "" {
			fmt.Fprintf(w, " [not restored: %s]", o.Excluded)
		} else if o.Volume != "" {
			fmt.Fprintf(w, " [volume: %s]", o.Volume)
		}
		if len(o.Modifiers) > 0 {
			var rules []string
			for _, c := range o.Modifiers {
				r := strconv.Itoa(c.Rule)
				if c.Conditional {
					r += " if its matches hold"
				}
				rules = append(rules, r)
			}
			fmt.Fprintf(w, " [modified by rule %s]", strings.Join(rules, ", "))
		}
		if o.Gate != "" {
			fmt.Fprintf(w, " [%s]", o.Gate)
		}
		fmt.Fprintln(w)
	}
	if len(p.Plugins) > 0 {
		fmt.Fprintln(w, "\nPlugins (restore item actions, in the order they run):")
		for _, pl := range p.Plugins {
			fmt.Fprintf(w, "  %-45s %-3s applies to %s\n", pl.Name, pl.Version, selectorText(pl.AppliesTo))
		}
	}
	for _, c := range conflicts {
		fmt.Fprintf(w, "\nThe restore would wait for %v\n", c)
	}
	var cp []string
	for _, u := range p.CriticalPath {
		cp = append(cp, name(u))
	}
	fmt.Fprintf(w, "\nCritical path: %s\n", strings.Join(cp, " -> "))
	for _, c := range p.Cycles {
		fmt.Fprintf(w, "Cycle: %s\n", c.Text)
	}
	if len(p.Warnings) > 0 {
		fmt.Fprintln(w, "\nWarnings:")
		for _, x := range p.Warnings {
			fmt.Fprintln(w, "  "+x)
		}
	}
	return w.Flush()
}

// WriteText writes the report as a person reads it: each object that did not simply
// restore (failed, skipped, with warnings, hooks or operations) with why, the objects
// the plan left to the target counted by rule, the summary, and health when waited for.
func (r *Report) WriteText(out io.Writer) error {
	w := bufio.NewWriter(out)
	leftOut := map[string]int{} // by the plan's rule: one line each, not one per object
	for o := range r.Unusual() {
		if o.Status == Restored && len(o.Warnings) == 0 && len(o.Operations) == 0 && len(o.Hooks) == 0 {
			continue
		}
		if o.Status == Skipped && (o.SkippedBy == NonRestorable || o.SkippedBy == ControllerManaged) {
			leftOut[o.SkippedBy]++
			continue
		}
		fmt.Fprintf(w, "%-9s %s %s", o.Status, o.Kind, qualifiedName(o.Namespace, o.Name))
		if o.Reason != "" {
			fmt.Fprintf(w, ": %s", o.Reason)
		}
		fmt.Fprintln(w)
		for _, x := range o.Warnings {
			fmt.Fprintf(w, "          warning: %s\n", x)
		}
		for _, h := range o.Hooks {
			result := "ran"
			if h.Err != "" {
				result = "failed: " + h.Err
			}
			fmt.Fprintf(w, "          exec hook %s in container %s: %s\n", h.Source, h.Container, result)
		}
		for _, op := range o.Operations {
			fmt.Fprintf(w, "          operation %s of %s: %s after %s", op.ID, op.Plugin, op.Phase, op.Ended.Sub(op.Started).Round(time.Millisecond))
			if op.Progress != "" {
				fmt.Fprintf(w, " (%s)", op.Progress)
			}
			fmt.Fprintln(w)
		}
	}
	var volumes []string
	for o := range r.volumeObjects() {
		if o.Resource == persistentVolumeClaims.Resource || o.Resource == podsResource.Resource {
			volumes = append(volumes, fmt.Sprintf("Volume    %s %s: %s, %s", o.Kind, qualifiedName(o.InTarget()), o.Volume, strings.ToLower(string(o.Status))))
		}
	}
	for _, v := range volumes {
		fmt.Fprintln(w, v)
	}
	for _, by := range slices.Sorted(maps.Keys(leftOut)) {
		fmt.Fprintf(w, "Skipped   %d objects left to the target by %s (plan -o text lists them)\n", leftOut[by], by)
	}
	fmt.Fprintf(w, "%d objects in %s:", r.Len(), r.Finished.Sub(r.Started).Round(time.Millisecond))
	for _, s := range []Status{Restored, Adopted, Updated, Skipped, Failed, Cancelled} {
		if n := r.Count(s); n > 0 {
			fmt.Fprintf(w, " %d %s", n, strings.ToLower(string(s)))
		}
	}
	fmt.Fprintln(w)
	if h := r.Health; h != nil {
		fmt.Fprintf(w, "health after %s: %d healthy, %d not\n", h.Timeout, h.Healthy, len(h.NotHealthy))
		for _, o := range h.NotHealthy {
			fmt.Fprintf(w, "  not healthy: %s %s: %s\n", o.Kind, qualifiedName(o.Namespace, o.Name), o.Status)
		}
	}
	return w.Flush()
}

// WriteText writes what the verification found that does not hold, an object a line
// with its problems, then the summary.
func (r *VerifyReport) WriteText(out io.Writer) error {
	w := bufio.NewWriter(out)
	for _, o := range r.Objects {
		if o.Verdict == Verified {
			continue
		}
		ns, name := o.InTarget()
		fmt.Fprintf(w, "%-8s %s %s: %s\n", o.Verdict, o.Kind, qualifiedName(ns, name), strings.Join(o.Problems, "; "))
	}
	fmt.Fprintf(w, "%d objects: %d verified, %d replaced by their controllers, %d missing, %d differ\n", len(r.Objects),
		r.Summary[Verified], r.Summary[Replaced], r.Summary[Missing], r.Summary[Differs])
	return w.Flush()
}

// selectorText reads a plugin's selector as a person would say it.
func selectorText(s ria.ResourceSelector) string {
	parts := []string{"resources " + orAll(s.IncludedResources)}
	if len(s.ExcludedResources) > 0 {
		parts = append(parts, "but "+strings.Join(s.ExcludedResources, ","))
	}
	if len(s.IncludedNamespaces) > 0 {
		parts = append(parts, "in namespaces "+strings.Join(s.IncludedNamespaces, ","))
	}
	if s.LabelSelector != "" {
		parts = append(parts, "labelled "+s.LabelSelector)
	}
	return strings.Join(parts, " ")
}

func orAll(names []string) string {
	if len(names) == 0 {
		return "*"
	}
	return strings.Join(names, ",")
}
