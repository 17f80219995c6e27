package restore_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/restoregraph/restoregraph/archive"
	"github.com/restoregraph/restoregraph/bench/workload"
	"github.com/restoregraph/restoregraph/memcluster"
	"github.com/restoregraph/restoregraph/restore"
)

func Example() {
	var tarball bytes.Buffer
	workload.CAPI(workload.CAPIOptions{Clusters: 2, Seed: 1}).Write(&tarball)
	backup, err := archive.Read(&tarball, archive.Options{})
	if err != nil {
		panic(err)
	}
	cfg, stop, err := memcluster.Start(memcluster.Options{GC: true})
	if err != nil {
		panic(err)
	}
	defer stop()

	report, err := restore.Run(context.Background(), cfg, backup, restore.Options{Workers: 8})
	if err != nil {
		panic(err)
	}
	fmt.Println(report.Count(restore.Restored), "restored,", report.Count(restore.Failed), "failed, all well:", report.OK())
	// Output: 95 restored, 0 failed, all well: true
}
