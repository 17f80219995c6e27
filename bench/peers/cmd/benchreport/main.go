// Command benchreport turns the output of `go test -bench` for BenchmarkStrategies and
// BenchmarkOverhead into the Markdown tables and the chart docs/measured.md shows:
//
//	go test -run '^$' -bench . ./bench/strategy ./bench/peers | benchreport -out docs/bench
//
// It writes strategies.md, strategies.png (makespan / lower bound per strategy and
// workload) and overhead.md into -out.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// result is one benchmark line: its name below the top-level benchmark, and its
// metrics by unit.
type result struct {
	name    string
	metrics map[string]float64
}

var line = regexp.MustCompile(`^Benchmark(\w+)/(\S+?)(-\d+)?\s+\d+\s+(.*)$`)

// parse reads go test -bench output, keyed by the last element of the package and the
// benchmark, "strategy.Strategies" for example: two packages may name a benchmark alike.
func parse(r io.Reader) (map[string][]result, error) {
	out := map[string][]result{}
	pkg := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "pkg: "); ok {
			pkg = path.Base(strings.TrimSpace(p))
			continue
		}
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		f := strings.Fields(m[4])
		res := result{name: m[2], metrics: map[string]float64{}}
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark %s/%s: metric %q: %w", m[1], m[2], f[i+1], err)
			}
			res.metrics[f[i+1]] = v
		}
		key := pkg + "." + m[1]
		out[key] = append(out[key], res)
	}
	return out, sc.Err()
}

// strategies are the columns, in the order BenchmarkStrategies reports them.
var strategies = []string{"restoregraph", "restoregraph-fifo", "levels", "kapp", "velero"}

func strategiesTable(w io.Writer, rs []result, stamp string) {
	fmt.Fprintf(w, "Makespan / lower bound (1.00 is optimal), %s\n\n", stamp)
	fmt.Fprintf(w, "| workload | nodes | bound (ms) | %s | restoregraph vs velero |\n", strings.Join(strategies, " | "))
	fmt.Fprintf(w, "|---|--:|--:|%s--:|\n", strings.Repeat("--:|", len(strategies)))
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %.0f | %.1f |", r.name, r.metrics["nodes"], r.metrics["bound-ms"])
		for _, s := range strategies {
			fmt.Fprintf(w, " %.2f |", r.metrics[s+"/bound"])
		}
		fmt.Fprintf(w, " %.1f× |\n", r.metrics["speedup-vs-velero"])
	}
}

func overheadTable(w io.Writer, rs []result, stamp string) {
	fmt.Fprintf(w, "Scheduler overhead, a node function that does nothing, %s\n\n", stamp)
	fmt.Fprintln(w, "| walker | nodes | ns/node | allocs/node | B/node | × restoregraph |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|")
	ours := map[string]float64{}
	for _, r := range rs {
		if walker, nodes, _ := strings.Cut(r.name, "/"); walker == "restoregraph" {
			ours[nodes] = r.metrics["ns/node"]
		}
	}
	for _, r := range rs {
		walker, nodes, _ := strings.Cut(r.name, "/")
		nodes = strings.TrimPrefix(nodes, "nodes=")
		ratio := r.metrics["ns/node"] / ours["nodes="+nodes]
		fmt.Fprintf(w, "| %s | %s | %.0f | %.2f | %.0f | %.1f |\n", walker, nodes, r.metrics["ns/node"],
			r.metrics["allocs/node"], r.metrics["B/node"], ratio)
	}
}

func chart(path string, rs []result, stamp string) error {
	p := plot.New()
	p.Title.Text = "Makespan / lower bound, " + stamp
	p.Y.Label.Text = "makespan / lower bound"
	const width = 9
	var names []string
	for _, r := range rs {
		names = append(names, r.name)
	}
	// Bars rise from floor, stacked on an undrawn bar, since a log scale has no zero.
	const floor = 0.9
	for i, s := range strategies {
		v := make(plotter.Values, len(rs))
		under := make(plotter.Values, len(rs))
		for j, r := range rs {
			v[j] = max(r.metrics[s+"/bound"]-floor, 0)
			under[j] = floor
		}
		base, err := plotter.NewBarChart(under, vg.Points(width))
		if err != nil {
			return err
		}
		base.Offset = vg.Points(float64(i-len(strategies)/2) * width)
		bars, err := plotter.NewBarChart(v, vg.Points(width))
		if err != nil {
			return err
		}
		bars.StackOn(base)
		bars.LineStyle.Width = 0
		bars.Color = plotutil.Color(i)
		p.Add(bars)
		p.Legend.Add(s, bars)
	}
	p.Legend.Top = true
	p.Y.Max *= 3 // room for the legend above the tallest bar
	p.NominalX(names...)
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: 2}
	return p.Save(22*vg.Centimeter, 11*vg.Centimeter, path)
}

func main() {
	out := flag.String("out", "docs/bench", "directory to write strategies.md, strategies.png and overhead.md into")
	machine := flag.String("machine", fmt.Sprintf("%d CPUs", runtime.NumCPU()), "the machine, as the tables name it")
	flag.Parse()
	results, err := parse(os.Stdin)
	if err != nil {
		log.Fatal(err)
	}
	if len(results["strategy.Strategies"]) == 0 && len(results["peers.Overhead"]) == 0 {
		// make bench BENCH=Decode, for example: nothing to report, nothing overwritten.
		fmt.Fprintln(os.Stderr, "benchreport: no BenchmarkStrategies of bench/strategy or BenchmarkOverhead of bench/peers on standard input; nothing written")
		return
	}
	stamp := fmt.Sprintf("%s, %s", time.Now().Format("2006-01-02"), *machine)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	write := func(name string, fill func(io.Writer)) {
		f, err := os.Create(filepath.Join(*out, name))
		if err != nil {
			log.Fatal(err)
		}
		fill(f)
		if err := f.Close(); err != nil {
			log.Fatal(err)
		}
	}
	if rs := results["strategy.Strategies"]; len(rs) > 0 {
		write("strategies.md", func(w io.Writer) { strategiesTable(w, rs, stamp) })
		if err := chart(filepath.Join(*out, "strategies.png"), rs, stamp); err != nil {
			log.Fatal(err)
		}
	}
	if rs := results["peers.Overhead"]; len(rs) > 0 {
		write("overhead.md", func(w io.Writer) { overheadTable(w, rs, stamp) })
	}
}
