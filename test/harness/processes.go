package harness

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processes are the programs a Cluster or an S3 server runs, each logging into a file of
// its name in dir, stopped together, last started first.
type processes struct {
	dir   string
	procs []process // in start order
}

type process struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process exits
	env    []string      // what it was started with, to start it again
	path   string
	args   []string
	// release, when not nil, gives back what the process held once it has ended for
	// good (stopped, not killed to be restarted).
	release func()
}

func (ps *processes) logPath(name string) string { return filepath.Join(ps.dir, name+".log") }

// start runs path with args and env added to the test's environment.
func (ps *processes) start(name, path string, args ...string) error {
	return ps.startEnv(name, nil, path, args...)
}

func (ps *processes) startEnv(name string, env []string, path string, args ...string) error {
	// Appended to: a process started again (Restart) logs after what it wrote before.
	log, err := os.OpenFile(ps.logPath(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = ps.dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	// The kernel kills the process when the test binary dies, whatever kills it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); log.Close(); close(exited) }()
	ps.procs = append(ps.procs, process{name: name, cmd: cmd, exited: exited, env: env, path: path, args: args})
	return nil
}

// CPU returns the CPU time, user and system, that each running process has used since
// it started, by name: what a benchmark's servers spent beside its client. It reads
// /proc (Linux).
func (ps *processes) CPU() (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for _, p := range ps.procs {
		select {
		case <-p.exited:
			continue
		default:
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
		if err != nil {
			return nil, fmt.Errorf("CPU of %s: %w", p.name, err)
		}
		// The fields after the command's name, which is in parentheses and may hold
		// spaces: utime and stime are the 12th and 13th of them (the 14th and 15th of
		// the line), in clock ticks of a hundredth of a second.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 13 {
			return nil, fmt.Errorf("CPU of %s: /proc/%d/stat has %d fields after the name", p.name, p.cmd.Process.Pid, len(f))
		}
		var ticks int64
		for _, field := range f[11:13] {
			t, err := strconv.ParseInt(field, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("CPU of %s: %w", p.name, err)
			}
			ticks += t
		}
		out[p.name] = time.Duration(ticks) * (time.Second / 100)
	}
	return out, nil
}

// Kill ends the process of that name at once (SIGKILL), as a crash or a lost machine
// does, and returns once it has exited. Restart starts it again.
func (ps *processes) Kill(name string) error {
	for _, p := range ps.procs {
		if p.name == name {
			if err := p.cmd.Process.Kill(); err != nil {
				return err
			}
			<-p.exited
			return nil
		}
	}
	return fmt.Errorf("no process %s", name)
}

// Restart starts the process of that name again, as it was first started; it must have
// exited (Kill).
func (ps *processes) Restart(name string) error {
	for i, p := range ps.procs {
		if p.name != name {
			continue
		}
		select {
		case <-p.exited:
		default:
			return fmt.Errorf("%s is running", name)
		}
		ps.procs = append(ps.procs[:i], ps.procs[i+1:]...)
		if err := ps.startEnv(p.name, p.env, p.path, p.args...); err != nil {
			if p.release != nil {
				p.release()
			}
			return err
		}
		ps.procs[len(ps.procs)-1].release = p.release
		return nil
	}
	return fmt.Errorf("no process %s", name)
}

// exitedChan is closed when the process of that name exits; nil (never ready) when there
// is none.
func (ps *processes) exitedChan(name string) chan struct{} {
	for _, p := range ps.procs {
		if p.name == name {
			return p.exited
		}
	}
	return nil
}

// Stop ends the processes, last started first: SIGTERM, then SIGKILL after 10 seconds.
func (ps *processes) Stop() {
	for i := len(ps.procs) - 1; i >= 0; i-- {
		ps.procs[i].stop()
	}
	ps.procs = nil
}

// stopOne ends the process of that name alone.
func (ps *processes) stopOne(name string) {
	for i, p := range ps.procs {
		if p.name == name {
			p.stop()
			ps.procs = append(ps.procs[:i], ps.procs[i+1:]...)
			return
		}
	}
}

func (p process) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
	if p.release != nil {
		p.release()
	}
}

// onStop has release called once the last process started of that name has been
// stopped.
func (ps *processes) onStop(name string, release func()) {
	for i := len(ps.procs) - 1; i >= 0; i-- {
		if ps.procs[i].name == name {
			ps.procs[i].release = release
			return
		}
	}
}

// Log returns what a process wrote, for a failing test's output.
func (ps *processes) Log(name string) string {
	data, _ := os.ReadFile(ps.logPath(name))
	return string(data)
}

func (ps *processes) logTail(name string, n int) string {
	log := ps.Log(name)
	return log[max(0, len(log)-n):]
}
