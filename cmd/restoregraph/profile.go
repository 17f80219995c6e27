package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sync"

	"github.com/spf13/cobra"
)

// addProfileFlags adds --cpu-profile, --heap-profile and --trace to root: where a run's
// time and memory go, for go tool pprof, and what its goroutines waited for, for go tool
// trace.
func addProfileFlags(root *cobra.Command) {
	root.PersistentFlags().String("cpu-profile", "", "write a CPU profile of the run to this file (go tool pprof reads it)")
	root.PersistentFlags().String("trace", "", "write an execution trace of the run to this file (go tool trace reads it; -pprof=sync says where goroutines waited on locks and channels)")
	root.PersistentFlags().String("heap-profile", "", "write a heap profile at the run's end to this file: what was allocated over the run, and what is live (with --embedded, before the embedded server closes, so that its store is in it)")
}

// heapProfile writes the run's heap profile once: when the embedded server is about to
// close, so that what it holds is in the live view, or else at the run's end. A process
// runs one command.
var heapProfile struct {
	once sync.Once
	path string
	err  error
}

// writeHeapProfile writes the heap profile --heap-profile asks for, the first time it
// is called.
func writeHeapProfile() error {
	heapProfile.once.Do(func() {
		if heapProfile.path == "" {
			return
		}
		f, err := os.Create(heapProfile.path)
		if err != nil {
			heapProfile.err = fmt.Errorf("--heap-profile: %w", err)
			return
		}
		runtime.GC() // the live heap as of now
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			f.Close()
			heapProfile.err = fmt.Errorf("writing a profile: %w", err)
			return
		}
		if err := f.Close(); err != nil {
			heapProfile.err = fmt.Errorf("writing a profile: %w", err)
		}
	})
	return heapProfile.err
}

// startProfiles starts what cmd's profile flags ask for, and returns what ends them.
func startProfiles(cmd *cobra.Command) (stop func() error, err error) {
	cpuPath, _ := cmd.Flags().GetString("cpu-profile")
	tracePath, _ := cmd.Flags().GetString("trace")
	heapProfile.path, _ = cmd.Flags().GetString("heap-profile")
	var cpu, tr *os.File
	if cpuPath != "" {
		if cpu, err = os.Create(cpuPath); err != nil {
			return nil, badInput("--cpu-profile: %v", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, fmt.Errorf("--cpu-profile: %w", err)
		}
	}
	if tracePath != "" {
		if tr, err = os.Create(tracePath); err == nil {
			err = trace.Start(tr)
		}
		if err != nil {
			if cpu != nil {
				pprof.StopCPUProfile()
				cpu.Close()
			}
			if tr != nil {
				tr.Close()
			}
			return nil, badInput("--trace: %v", err)
		}
	}
	return func() error {
		var errs []error
		if cpu != nil {
			pprof.StopCPUProfile()
			errs = append(errs, cpu.Close())
		}
		if tr != nil {
			trace.Stop()
			errs = append(errs, tr.Close())
		}
		for _, err := range errs {
			if err != nil {
				return fmt.Errorf("writing a profile: %w", err)
			}
		}
		return writeHeapProfile()
	}, nil
}
