// Command align keeps the modules make test compiles on one version of each module they
// share (gomod.Aligned), so that a cold build compiles what they share once: align
// -repo DIR raises each to the highest any takes (make align runs it); align -check
// lists where they differ and exits 1 (make lint runs it).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/restoregraph/restoregraph/release/gomod"
)

func main() {
	repo := flag.String("repo", "..", "the repository's root")
	check := flag.Bool("check", false, "list where the modules differ, and change nothing")
	flag.Parse()
	ctx := context.Background()
	var left []gomod.Mismatch
	var err error
	if *check {
		var lists map[string]gomod.Versions
		if lists, err = gomod.ListAll(ctx, *repo, gomod.Aligned); err == nil {
			left = gomod.Mismatches(lists)
		}
	} else {
		left, err = gomod.Align(ctx, *repo, gomod.Aligned, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "align:", err)
		os.Exit(1)
	}
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "align: the modules take %d modules at more than one version (make align raises them):\n", len(left))
		for _, m := range left {
			fmt.Fprintln(os.Stderr, " ", m)
		}
		os.Exit(1)
	}
}
