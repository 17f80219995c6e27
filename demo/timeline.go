package main

import (
	"fmt"
	"html"
	"io"
	"path"
	"slices"
	"time"

	"github.com/restoregraph/restoregraph/restore"
)

// timelineSVG draws one bar per object, from when its dependencies were ready: grey
// while it waited for a worker, blue while it was created, orange while it became ready.
func timelineSVG(w io.Writer, p *restore.Plan, rep *restore.Report) error {
	objs := slices.Collect(rep.Objects())
	slices.SortFunc(objs, func(a, b restore.ObjectResult) int { return a.Started.Compare(b.Started) })
	ready := map[string]time.Time{}
	for _, o := range objs {
		ready[string(o.UID)] = o.Ready
	}
	depsReady := map[string]time.Time{}
	for po := range p.Objects() {
		t := rep.Started
		for _, d := range po.DependsOn {
			if r := ready[string(d.UID)]; r.After(t) {
				t = r
			}
		}
		depsReady[string(po.UID)] = t
	}
	const (
		label, plot, row, top = 260, 900, 9, 40
	)
	total := rep.Finished.Sub(rep.Started)
	if total <= 0 {
		total = time.Millisecond
	}
	x := func(t time.Time) float64 {
		if t.IsZero() {
			return label
		}
		return label + float64(t.Sub(rep.Started))/float64(total)*plot
	}
	height := top + row*len(objs) + 30
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="Helvetica,Arial,sans-serif" font-size="8">`+"\n", label+plot+20, height)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(w, `<text x="10" y="16" font-size="13">Restore timeline: %d objects in %s</text>`+"\n", len(objs), total.Round(time.Millisecond))
	legend := []struct{ color, text string }{{"#c8c8c8", "waiting for a worker"}, {"#3b7dd8", "creating"}, {"#f0a030", "becoming ready"}}
	for i, l := range legend {
		fmt.Fprintf(w, `<rect x="%d" y="24" width="10" height="8" fill="%s"/><text x="%d" y="31">%s</text>`+"\n", label+i*150, l.color, label+i*150+14, l.text)
	}
	for tick := range 11 {
		tx := label + float64(tick)*plot/10
		fmt.Fprintf(w, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n",
			tx, top-4, tx, height-26, tx, height-14, (total * time.Duration(tick) / 10).Round(time.Millisecond))
	}
	for i, o := range objs {
		y := top + i*row
		name := o.Kind + " " + path.Join(o.Namespace, o.Name)
		if len(name) > 52 {
			name = name[:51] + "…"
		}
		fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="end">%s</text>`, label-4, y+7, html.EscapeString(name))
		seg := func(from, to time.Time, color string) {
			if from.IsZero() || to.IsZero() || !to.After(from) {
				return
			}
			fmt.Fprintf(w, `<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"><title>%s: %s</title></rect>`,
				x(from), y+1, max(x(to)-x(from), 0.5), row-2, color, html.EscapeString(name), to.Sub(from).Round(time.Microsecond))
		}
		seg(depsReady[string(o.UID)], o.Started, "#c8c8c8")
		seg(o.Started, o.Created, "#3b7dd8")
		seg(o.Created, o.Ready, "#f0a030")
		fmt.Fprintln(w)
	}
	_, err := fmt.Fprintln(w, "</svg>")
	return err
}
