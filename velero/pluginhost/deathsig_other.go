//go:build !linux

package pluginhost

import "syscall"

// dieWithParent is nothing where the kernel cannot kill a process with its parent: there,
// a plugin process may outlive a host killed by SIGKILL.
func dieWithParent() *syscall.SysProcAttr { return nil }
