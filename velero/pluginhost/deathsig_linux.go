package pluginhost

import "syscall"

// dieWithParent has the kernel kill a plugin process when the host dies: a host killed
// by SIGKILL leaves no plugin behind.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
