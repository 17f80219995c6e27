// Command peakrss runs a command and writes its peak resident memory, in bytes, and the
// CPU time it used, user and system, in nanoseconds, to file descriptor 3, on one line;
// it exits as the command did.
//
// It exists so that the peak is the command's own. On Linux, execve records the peak of
// the memory image it replaces as the new program's, and Go starts a command sharing its
// own image until execve: a command started straight from a benchmark that holds a large
// server reports that server's peak. Started from this small process, the command's
// peak is at least this process's few megabytes, and otherwise its own.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: peakrss COMMAND [ARG...] 3>PEAK")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			fmt.Fprintln(os.NewFile(3, "peak"), ru.Maxrss*1024, syscall.TimevalToNsec(ru.Utime), syscall.TimevalToNsec(ru.Stime))
		}
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "peakrss:", err)
		os.Exit(127)
	}
}
