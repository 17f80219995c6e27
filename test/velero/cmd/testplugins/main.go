// Command testplugins serves the RestoreItemActions and the object store the plugin
// host is tested with, built with Velero's own plugin framework, as any Velero plugin
// binary is.
package main

import (
	"github.com/vmware-tanzu/velero/pkg/plugin/framework"
)

func main() {
	framework.NewServer().
		RegisterRestoreItemAction("example.io/relabel", newRelabel).
		RegisterRestoreItemActionV2("example.io/needs-settings", newNeedsSettings).
		RegisterRestoreItemAction("example.io/skip-secrets", newSkipSecrets).
		RegisterRestoreItemAction("example.io/fail-on-flags", newFailOnFlags).
		RegisterRestoreItemAction("example.io/crash-once", newCrashOnce).
		RegisterRestoreItemAction("example.io/annotate-all", newAnnotateAll).
		RegisterRestoreItemAction("example.io/hang-on-hang", newHangOnHang).
		RegisterRestoreItemAction("example.io/garbage", newGarbage).
		RegisterRestoreItemActionV2("example.io/copy-volume", newCopyVolume).
		RegisterObjectStore("example.io/dir", newDirStore).
		Serve()
}
