package metrics

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/reports"
)

// Metrics is one process's registry of idemcheck metrics.
type Metrics struct {
	reg       *prometheus.Registry
	attempts  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	ops       *prometheus.CounterVec
	verdicts  *verdictSet
	runResult *prometheus.GaugeVec
	runInfo   *prometheus.GaugeVec
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
		verdicts: &verdictSet{by: map[string][]verdict{}},
		runResult: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "idemcheck_run_result",
			Help: "The result of each judged scenario against its expectation: 1 on the series of its result (met, not_met, inconclusive; error when it could not run), 0 on the others.",
		}, []string{"scenario", "result"}),
		runInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "idemcheck_run_info",
			Help: "Always 1: what ran, as labels: the scenario, its run id (in its report and history), the idemcheck version and the target's host (host:port, several joined by commas).",
		}, []string{"scenario", "run_id", "version", "target_host"}),
	}
	m.reg.MustRegister(m.attempts, m.latency, m.ops, m.verdicts, m.runResult, m.runInfo)
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

// Verdicts records each verdict of a judged scenario: how many keys or
// ops broke its invariant (idemcheck_violations) and its result
// (idemcheck_result), by invariant and oracle. It replaces the
// scenario's verdicts recorded before.
func (m *Metrics) Verdicts(scenario string, vs []checks.Verdict) {
	m.verdicts.set(scenario, vs)
}

// Result records the result of a judged scenario against its expectation
// (idemcheck_run_result): checks.Met, NotMet or Inconclusive, or the
// result of a scenario that could not run.
func (m *Metrics) Result(scenario string, r checks.Result) {
	known := []checks.Result{checks.Met, checks.NotMet, checks.Inconclusive}
	if !slices.Contains(known, r) {
		known = append(known, r)
	}
	for _, k := range known {
		v := 0.0
		if k == r {
			v = 1
		}
		m.runResult.WithLabelValues(scenario, string(k)).Set(v)
	}
}

// RunInfo records what a scenario runs as (idemcheck_run_info): its run
// id, the idemcheck version and the host of each target, never a path,
// query or credential. It replaces the scenario's run info recorded
// before.
func (m *Metrics) RunInfo(scenario, runID, version string, targets []*url.URL) {
	hosts := make([]string, 0, len(targets))
	for _, t := range targets {
		if t != nil && !slices.Contains(hosts, t.Host) {
			hosts = append(hosts, t.Host)
		}
	}
	m.runInfo.DeletePartialMatch(prometheus.Labels{"scenario": scenario})
	m.runInfo.WithLabelValues(scenario, runID, version, strings.Join(hosts, ",")).Set(1)
}

// Judged records what a scenario's summary says: its verdicts
// (Verdicts), its result (Result: met, not_met, inconclusive, or error
// for a scenario that could not run) and what ran (RunInfo, with the
// version of the summary's tool). targets are the run's targets, of
// which only the hosts are kept.
func (m *Metrics) Judged(s *reports.Summary, targets []*url.URL) {
	m.Verdicts(s.Scenario.Name, s.Verdicts)
	m.Result(s.Scenario.Name, s.Result)
	m.RunInfo(s.Scenario.Name, s.RunID, strings.TrimPrefix(s.Tool, "idemcheck "), targets)
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
