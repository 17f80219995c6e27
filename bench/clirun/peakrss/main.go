// Command peakrss runs a command and writes its peak resident memory, in bytes, and the
// CPU time it used, user and system, in nanoseconds, to file descriptor 3, on one line;
// it exits as the command did. With -cgroup DIR first, it moves itself into the cgroup
// DIR (its cgroup.procs) before it starts the command, which then runs within that
// cgroup's limits from its first instruction.
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
	"path/filepath"
	"strconv"
	"syscall"
)

func main() {
	args := os.Args[1:]
	if len(args) > 2 && args[0] == "-cgroup" {
		if err := os.WriteFile(filepath.Join(args[1], "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			fmt.Fprintln(os.Stderr, "peakrss:", err)
			os.Exit(127)
		}
		args = args[2:]
	}
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, "usage: peakrss [-cgroup DIR] COMMAND [ARG...] 3>PEAK")
		os.Exit(2)
	}
	cmd := exec.Command(args[0], args[1:]...)
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
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			// Killed (by the kernel, for a cgroup's memory): said, and exited as a shell does.
			fmt.Fprintf(os.Stderr, "peakrss: %s: %v\n", args[0], ws.Signal())
			os.Exit(128 + int(ws.Signal()))
		}
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "peakrss:", err)
		os.Exit(127)
	}
}
