package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// memoryShare is the part of its container's memory limit the Go collector is told to
// keep the process's memory within. The rest is for what the collector does not count:
// the kernel's page cache of the backup's spill file, which the memory controller
// charges to the container, and memory outside the Go heap.
const memoryShare = 0.9

// limitMemory sets the Go runtime's soft memory limit (GOMEMLIMIT) to memoryShare of
// the memory limit of the process's cgroup, version 1 or 2: a container's limit, as a
// pod's resources.limits.memory sets it. The collector then runs more often as the heap
// nears it, instead of letting the heap grow to twice what is live and the kernel kill
// the process (a million objects restored into the embedded server: killed in a 2 GiB
// container without it, done with it). GOMEMLIMIT, when set, is left as it is;
// AUTOMEMLIMIT=off turns this off and AUTOMEMLIMIT=R sets the share to R. Without a
// limit (no cgroup, or none with a memory limit) nothing changes. With refresh, the
// limit is read again every minute until ctx ends, for a pod whose limit is resized in
// place. An AUTOMEMLIMIT that is neither is bad input.
func limitMemory(ctx context.Context, log *slog.Logger, refresh bool) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts := []memlimit.Option{
		memlimit.WithRatio(memoryShare),
		memlimit.WithLogger(log),
		memlimit.WithProvider(func() (uint64, error) {
			limit, err := memlimit.FromCgroup()
			if err != nil && !errors.Is(err, memlimit.ErrNoLimit) {
				// No cgroup to read (another system, a cgroup without the memory
				// controller): no limit the process is held to that can be known.
				log.Debug("no container memory limit found", "reason", err)
				return 0, memlimit.ErrNoLimit
			}
			return limit, err
		}),
	}
	if refresh {
		opts = append(opts, memlimit.WithRefreshInterval(ctx, time.Minute))
	}
	if _, err := memlimit.Set(opts...); err != nil {
		return badInput("AUTOMEMLIMIT must be off or a share of the container's memory in (0, 1]: %v", err)
	}
	return nil
}
