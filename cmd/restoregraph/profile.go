package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// addProfileFlags adds --cpu-profile and --heap-profile to root: where a run's time and
// memory go, for go tool pprof.
func addProfileFlags(root *cobra.Command) {
	root.PersistentFlags().String("cpu-profile", "", "write a CPU profile of the run to this file (go tool pprof reads it)")
	root.PersistentFlags().String("heap-profile", "", "write a heap profile at the run's end to this file: what was allocated over the run, and what is live")
}

// startProfiles starts what cmd's profile flags ask for, and returns what ends them.
func startProfiles(cmd *cobra.Command) (stop func() error, err error) {
	cpuPath, _ := cmd.Flags().GetString("cpu-profile")
	heapPath, _ := cmd.Flags().GetString("heap-profile")
	var cpu *os.File
	if cpuPath != "" {
		if cpu, err = os.Create(cpuPath); err != nil {
			return nil, badInput("--cpu-profile: %v", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, fmt.Errorf("--cpu-profile: %w", err)
		}
	}
	return func() error {
		var errs []error
		if cpu != nil {
			pprof.StopCPUProfile()
			errs = append(errs, cpu.Close())
		}
		if heapPath != "" {
			f, err := os.Create(heapPath)
			if err != nil {
				return fmt.Errorf("--heap-profile: %w", err)
			}
			runtime.GC() // the live heap as of the end
			errs = append(errs, pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
		}
		for _, err := range errs {
			if err != nil {
				return fmt.Errorf("writing a profile: %w", err)
			}
		}
		return nil
	}, nil
}
