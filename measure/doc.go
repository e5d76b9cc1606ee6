// Package measure counts what a run sent and how its ops ended, and
// measures their latency in HdrHistograms: the figures that reports show
// and that thresholds are judged on. It describes; it never decides.
//
//	history ──> Of ──> Measures{Load, Faults, Statuses, Errors, Latency}
//	                      │                                  │
//	                      v                                  v
//	                   reports                     checks.Measured (thresholds)
//
// Latency is per attempt (clean attempts only) and per op (first intended
// send to final answer), both from the intended start, in HdrHistograms of
// 3 significant digits that merge exactly across shards.
package measure
