// Command gomod writes the go.mod files of a release commit (make release-gomod runs
// it): gomod -repo DIR -version vX.Y.Z.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/restoregraph/restoregraph/release/gomod"
)

func main() {
	repo := flag.String("repo", "..", "the repository's root")
	version := flag.String("version", "", "the release's version, vX.Y.Z")
	flag.Parse()
	if err := gomod.Prepare(*repo, *version); err != nil {
		fmt.Fprintln(os.Stderr, "gomod:", err)
		os.Exit(1)
	}
}
