// Package metrics exposes a run's progress and verdicts as Prometheus
// metrics, for the dashboards a team watches while idemcheck loads its
// staging fleet and for the alerts that outlive the run: attempts by
// outcome, status and fault, their latency, ops by how they ended, the
// violations and result of each invariant of each judged scenario, the
// scenario's own result, and what ran (run info).
//
//	runner ──AttemptDone, OpDone──> Observer ──> Registry ──> /metrics (cmd serves it)
//	checks ──Verdicts, Result──────────────────────┤
//	cmd ─────RunInfo───────────────────────────────┘
//	                                               └──> Pusher ──PUT──> Pushgateway
//
// It uses the official client library; it never prints and never serves
// by itself: Handler is mounted by the command, and Pusher pushes when
// the command says so (a CI run is often shorter than a scrape interval:
// only a push keeps its result).
package metrics
