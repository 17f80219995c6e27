//go:build !linux

package memcluster

import "os"

// inMemoryFS reports whether f's file system keeps its pages in memory: where it
// cannot be asked, a temporary directory is taken to be on a disk, as macOS's and
// Windows' are.
func inMemoryFS(*os.File) bool { return false }
