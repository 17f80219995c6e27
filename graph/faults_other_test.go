//go:build !linux

package graph

// pageFaults cannot be asked here.
func pageFaults() (int64, bool) { return 0, false }
