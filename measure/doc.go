// Package measure counts what a run sent and how its ops ended, and
// measures their latency in HdrHistograms: the figures that reports show
// and that thresholds are judged on. It describes; it never decides.
//
//	history ──> Of ──> Measures{Load, Faults, Statuses, Errors, Latency}
//	   │                  │                                  │
//	   │                  v                                  v
//	   │               reports (in ms)             checks.Measured (thresholds)
//	   └──> ChartsOf ──> Charts (latency over time, distributions) ──> reports' HTML
//
// Latency is per attempt (clean attempts only) and per op (first intended
// send to final answer), both from the intended start, in HdrHistograms of
// 3 significant digits that merge exactly across shards. Latencies are
// time.Duration here; reports turn them into milliseconds as they render.
// Acc and ChartsAcc take a history in parts (history.Split), one part in
// memory at a time, and give what Of and ChartsOf give of it whole.
// Tally counts a run while it goes, from the runner's observer calls, for
// live progress.
package measure
