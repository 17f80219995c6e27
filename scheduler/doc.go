// Package scheduler runs the nodes of any DAG with a bounded pool of workers, each node
// as soon as all its predecessors have succeeded. It knows nothing of Kubernetes.
//
// Guarantees:
//
//   - Ordering. A node starts only after every predecessor succeeded, and after every
//     node it awaited (Node.Await) finished.
//   - Concurrency. Never more than Options.Workers node functions execute at once. A
//     node blocked in Await does not count: it gives up its slot while it waits and
//     takes one back before Await returns.
//   - Exactly once. Every node is reported exactly once, as Succeeded, Failed, Skipped
//     (with the failed ancestor and the chain that blocked it, or ErrCycle for a node on
//     or behind a cycle of the DAG) or Cancelled.
//   - Priority. Ready nodes start highest priority first: by default the longest
//     remaining path (critical path first), ties to the lower node ID or in the order
//     Options.Ties gives. Nodes that a running node awaits, and their unfinished
//     ancestors, are raised above all others.
//   - Failure isolation. A failure skips the failed node's descendants only; independent
//     branches go on. Options.FailFast instead cancels everything not yet started, and
//     Run returns that failure.
//   - Panics. A panic in a node function is recovered: that node Fails with a
//     *PanicError (what panicked and where, on one line, and its stack) and the run
//     stops as if cancelled, returning it, since the code that panicked may have left
//     shared state half written. A caller that can contain a panic (a plugin's call, say)
//     recovers it itself and returns an ordinary error.
//   - Cancellation. When ctx is cancelled nothing new starts; running nodes see the
//     cancellation through their ctx; nodes not started are Cancelled, and Run returns
//     the context's cause. The workers are an errgroup: Run returns only after every
//     worker and every node function has returned.
//   - Dynamic dependencies. Await on a node that already depends on the caller, directly
//     or through other awaits, fails at once with a *CycleError instead of deadlocking.
//   - Events. Options.OnEvent receives events (started, waiting, resumed, succeeded,
//     failed, skipped, cancelled, with times and worker) in order from one goroutine fed
//     by an unbounded queue, so a slow consumer never slows the workers. Run returns
//     after the last event is delivered.
package scheduler
