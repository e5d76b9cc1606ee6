// Package metrics exposes a run's progress as Prometheus metrics, for the
// dashboards a team watches while idemcheck loads its staging fleet:
// attempts by outcome, status and fault, their latency, ops by how they
// ended, and the violations each judged scenario found.
//
//	runner ──AttemptDone, OpDone──> Observer ──> Registry ──> /metrics (cmd serves it)
//	checks ──Verdicts──────────────────────────────┘
//
// It uses the official client library; it never prints and never serves
// by itself: Handler is mounted by the command.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
)

// Metrics is one process's registry of idemcheck metrics.
type Metrics struct {
	reg        *prometheus.Registry
	attempts   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	ops        *prometheus.CounterVec
	violations *prometheus.GaugeVec
}

// New returns a registry with every idemcheck metric registered.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idemcheck_attempts_total",
			Help: "HTTP attempts by scenario, outcome (ok, fail, info), status (empty without an answer) and injected fault (empty for none).",
		}, []string{"scenario", "outcome", "status", "fault"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "idemcheck_attempt_latency_seconds",
			Help:    "Latency of answered attempts without an injected fault, from the intended start.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"scenario"}),
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idemcheck_ops_total",
			Help: "Ops by scenario and how they ended (acked, rejected, indeterminate, not_sent).",
		}, []string{"scenario", "state"}),
		violations: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "idemcheck_violations",
			Help: "Keys or ops that broke each invariant of each judged scenario (0 when it held).",
		}, []string{"scenario", "invariant"}),
	}
	m.reg.MustRegister(m.attempts, m.latency, m.ops, m.violations)
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Observer hears one scenario's load (runner.Observer and
// runner.AttemptObserver).
func (m *Metrics) Observer(scenario string) *Observer {
	return &Observer{m: m, scenario: scenario}
}

// Verdicts records how many keys or ops broke each invariant of a judged
// scenario.
func (m *Metrics) Verdicts(scenario string, vs []checks.Verdict) {
	for _, v := range vs {
		m.violations.WithLabelValues(scenario, v.Invariant).Set(float64(v.Violations))
	}
}

// Observer feeds one scenario's attempts and ops into the metrics; it is
// safe for concurrent use.
type Observer struct {
	m        *Metrics
	scenario string
}

// Start implements runner.Observer.
func (o *Observer) Start(int, time.Duration) {}

// OpDone implements runner.Observer.
func (o *Observer) OpDone(_ int, state history.OpState) {
	o.m.ops.WithLabelValues(o.scenario, state.String()).Inc()
}

// AttemptDone implements runner.AttemptObserver.
func (o *Observer) AttemptDone(a history.Attempt) {
	status := ""
	if a.Outcome == history.OK {
		status = strconv.Itoa(a.Status)
	}
	o.m.attempts.WithLabelValues(o.scenario, a.Outcome.String(), status, a.Fault).Inc()
	if a.Outcome == history.OK && a.Fault == "" {
		o.m.latency.WithLabelValues(o.scenario).Observe(a.Latency().Seconds())
	}
}
