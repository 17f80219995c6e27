package memcluster

import (
	"os"

	"golang.org/x/sys/unix"
)

// inMemoryFS reports whether f's file system keeps its pages in memory with no disk
// behind them: tmpfs (/dev/shm, often /tmp, a Pod's emptyDir of medium Memory) or
// ramfs. One it cannot tell is taken to be memory, where compressing costs only time.
func inMemoryFS(f *os.File) bool {
	var st unix.Statfs_t
	rc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstatfs(int(fd), &st) }); err != nil || serr != nil {
		return true
	}
	return st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC
}
