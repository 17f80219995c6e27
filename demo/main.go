// Command demo shows what restoregraph does on a backup of a Cluster API fleet, beside
// a model of Velero's restore and a naive copy:
//
//	go run . capi [--clusters N] [--workers N] [--latency D] [--out DIR] [--kubeconfig FILE]
//
// It writes the backup, the plan (JSON, DOT and SVG, rendered in process by Graphviz
// compiled to WebAssembly), the report and a timeline of the restore into --out. It is
// a program of its own, in a module of its own, so that neither the workload
// generators nor Graphviz are in the restoregraph command.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

// errUsage is a flag the demo cannot take: exit code 2, as the command's bad input.
type errUsage string

func (e errUsage) Error() string { return string(e) }

func main() {
	if len(os.Args) < 2 || os.Args[1] != "capi" {
		fmt.Fprintln(os.Stderr, "usage: demo capi [flags]  (demo capi -h lists them)")
		os.Exit(2)
	}
	var d capiDemo
	fs := flag.NewFlagSet("demo capi", flag.ExitOnError)
	d.flags(fs)
	_ = fs.Parse(os.Args[2:]) // ExitOnError
	if err := d.run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		var usage errUsage
		if errors.As(err, &usage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
