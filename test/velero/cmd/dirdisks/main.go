// Command dirdisks serves a VolumeSnapshotter over a directory (example.io/dir-disks),
// built with Velero's own plugin framework: the provider of native snapshots the tests
// back up with the real Velero server and restore from. It is a command of its own, so
// that a Velero server runs it without the test actions of testplugins.
package main

import "github.com/vmware-tanzu/velero/pkg/plugin/framework"

func main() {
	framework.NewServer().RegisterVolumeSnapshotter("example.io/dir-disks", newDirDisks).Serve()
}
