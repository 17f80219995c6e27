// Package readiness decides whether a restored object is ready, and waits until it is.
//
// A Probe looks at an object as it now is in the cluster. Built in: CustomResourceDefinition
// (Established and NamesAccepted), Namespace (Active), the workload and core kinds
// through cli-utils' kstatus (Current means ready), a generic Ready condition, and
// "exists". A Registry maps group-kinds to probes; for kinds nobody registered, its
// Policy says whether an object is ready once created (what other tools do silently)
// or only on a positive signal (a Ready condition). Either way the Result names the
// probe and the policy that decided: the choice is never silent.
//
// A Waiter gets the object, then watches it where the cluster supports watch and polls
// with backoff otherwise, until the probe says ready, the probe says it failed for good,
// the per-item timeout passes, or ctx is done. Time comes from an injected clock, so
// tests never sleep for real.
//
// AdditionalItemsWaiter implements Velero's "wait for additional items" design: after a
// plugin's additional items are restored, AreAdditionalItemsReady is polled until true or
// until the plugin's own timeout (or a default of ten minutes). On timeout or error the
// default records the error and goes on with the item; Strict fails the item instead.
package readiness
