package restore

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// LogTo writes the report to h as a restore's log, the way Velero's restore log reads:
// a record per object, stamped with the time its restore ended, that says what became
// of it and why. Restored, adopted and updated objects, and those the plan or a plugin
// left out, are at Info; an object skipped because what it needed failed, or
// cancelled, at Warn; a failed one at Error. A record names the object by resource,
// version, namespace and name (and where it went when its namespace was mapped), never
// by its content, so no Secret's data reaches the log. Each warning, asynchronous
// operation and exec hook of an object is a record of its own after the object's; a
// last record sums the restore up. It returns the first error h returns.
func (r *Report) LogTo(ctx context.Context, h slog.Handler) error {
	for o := range r.Objects() {
		at := o.Ended
		if at.IsZero() {
			at = r.Finished
		}
		object := objectAttrs(o)
		level, msg := slog.LevelInfo, strings.ToLower(string(o.Status))
		switch {
		case o.Status == Failed:
			level = slog.LevelError
		case o.Status == Cancelled, o.Status == Skipped && o.SkippedBy == "":
			level = slog.LevelWarn
		}
		attrs := object
		if o.Reason != "" {
			attrs = append(attrs, slog.String("reason", o.Reason))
		}
		if o.SkippedBy != "" {
			attrs = append(attrs, slog.String("by", o.SkippedBy))
		}
		if o.Retries > 0 {
			attrs = append(attrs, slog.Int("retries", o.Retries))
		}
		if o.FromJournal {
			attrs = append(attrs, slog.Bool("fromJournal", true))
		}
		if !o.Started.IsZero() && !o.Ended.IsZero() {
			attrs = append(attrs, slog.Duration("took", o.Ended.Sub(o.Started).Round(time.Millisecond)))
		}
		if err := emit(ctx, h, at, level, msg, attrs); err != nil {
			return err
		}
		for _, w := range o.Warnings {
			if err := emit(ctx, h, at, slog.LevelWarn, "warning", append(object[:len(object):len(object)], slog.String("warning", w))); err != nil {
				return err
			}
		}
		for _, op := range o.Operations {
			a := append(object[:len(object):len(object)], slog.String("operation", op.ID), slog.String("plugin", op.Plugin),
				slog.String("phase", string(op.Phase)), slog.Duration("took", op.Ended.Sub(op.Started).Round(time.Millisecond)))
			if op.Progress != "" {
				a = append(a, slog.String("progress", op.Progress))
			}
			if err := emit(ctx, h, op.Ended, slog.LevelInfo, "operation ended", a); err != nil {
				return err
			}
		}
		for _, hk := range o.Hooks {
			a := append(object[:len(object):len(object)], slog.String("hook", hk.Source), slog.String("container", hk.Container))
			level, msg := slog.LevelInfo, "exec hook ran"
			if hk.Err != "" {
				level, msg = slog.LevelError, "exec hook failed"
				a = append(a, slog.String("error", hk.Err))
			}
			if err := emit(ctx, h, at, level, msg, a); err != nil {
				return err
			}
		}
	}
	summary := []slog.Attr{slog.Int("objects", r.Len()), slog.Duration("took", r.Finished.Sub(r.Started).Round(time.Millisecond))}
	for _, s := range []Status{Restored, Adopted, Updated, Skipped, Failed, Cancelled} {
		if n := r.Count(s); n > 0 {
			summary = append(summary, slog.Int(strings.ToLower(string(s)), n))
		}
	}
	for _, w := range r.Warnings {
		if err := emit(ctx, h, r.Finished, slog.LevelWarn, "warning", []slog.Attr{slog.String("warning", w)}); err != nil {
			return err
		}
	}
	return emit(ctx, h, r.Finished, slog.LevelInfo, "restore ended", summary)
}

// objectAttrs names an object of the report: its resource, version, namespace and name,
// and where it was restored to when that is elsewhere.
func objectAttrs(o ObjectResult) []slog.Attr {
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String("resource", schema.GroupResource{Group: o.Group, Resource: o.Resource}.String()), slog.String("version", o.Version))
	if o.Namespace != "" {
		attrs = append(attrs, slog.String("namespace", o.Namespace))
	}
	attrs = append(attrs, slog.String("name", o.Name))
	if o.TargetNamespace != "" && o.TargetNamespace != o.Namespace {
		attrs = append(attrs, slog.String("targetNamespace", o.TargetNamespace))
	}
	if o.TargetName != "" && o.TargetName != o.Name {
		attrs = append(attrs, slog.String("targetName", o.TargetName))
	}
	return attrs
}

// emit hands h a record at the time at, when h takes records of level.
func emit(ctx context.Context, h slog.Handler, at time.Time, level slog.Level, msg string, attrs []slog.Attr) error {
	if !h.Enabled(ctx, level) {
		return nil
	}
	rec := slog.NewRecord(at, level, msg, 0)
	rec.AddAttrs(attrs...)
	return h.Handle(ctx, rec)
}
