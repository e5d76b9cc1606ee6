package metrics

import (
	"slices"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemcheck/idemcheck/checks"
)

// The help of the verdict series; a family's help is the same on every
// series, with or without the oracle label.
const (
	violationsHelp = "Keys or ops that broke each invariant of each judged scenario (0 when it held), by invariant and, when the invariant reads one, oracle."
	resultHelp     = "The result of each invariant of each judged scenario: 1 on the series of its result (met: it held; not_met: it was broken; inconclusive: it could not be judged), 0 on the other two; by invariant and, when the invariant reads one, oracle."
)

// verdictResults are the values of idemcheck_result's result label, in
// the words of the run's result (checks.Result), by verdict status.
var verdictResults = []struct {
	status checks.Status
	result checks.Result
}{
	{checks.Pass, checks.Met},
	{checks.Fail, checks.NotMet},
	{checks.Unknown, checks.Inconclusive},
}

// verdict is what the metrics keep of a checks.Verdict.
type verdict struct {
	invariant, oracle string
	status            checks.Status
	violations        int
}

// verdictSet holds the verdicts of each judged scenario and collects
// them as idemcheck_violations and idemcheck_result.
//
// The oracle is a label because two invariants of one check on two
// oracles (exactly_once on the ledger and on the processor) are two
// verdicts that must not collapse into one series. It is left out of
// the series of an invariant that reads no oracle (same_response), so
// that those keep the labels they always had: Prometheus treats an
// absent label and an empty one alike, so {scenario, invariant}
// selectors match both. A family whose series differ in label names is
// what an unchecked collector (one whose Describe sends nothing) may
// gather; a GaugeVec may not.
type verdictSet struct {
	mu sync.Mutex
	by map[string][]verdict // by scenario
}

func (s *verdictSet) set(scenario string, vs []checks.Verdict) {
	kept := make([]verdict, 0, len(vs))
	for _, v := range vs {
		// A scenario lists an invariant on an oracle once (its
		// validation says so); a second one would be a duplicate series.
		if slices.ContainsFunc(kept, func(k verdict) bool { return k.invariant == v.Invariant && k.oracle == v.Oracle }) {
			continue
		}
		kept = append(kept, verdict{invariant: v.Invariant, oracle: v.Oracle, status: v.Status, violations: v.Violations})
	}
	s.mu.Lock()
	s.by[scenario] = kept
	s.mu.Unlock()
}

// Describe implements prometheus.Collector; it sends nothing, which
// makes the set an unchecked collector (see verdictSet).
func (s *verdictSet) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (s *verdictSet) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.by))
	for name := range s.by {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, scenario := range names {
		for _, v := range s.by[scenario] {
			labels := []string{"scenario", "invariant"}
			values := []string{scenario, v.invariant}
			if v.oracle != "" {
				labels, values = append(labels, "oracle"), append(values, v.oracle)
			}
			desc := prometheus.NewDesc("idemcheck_violations", violationsHelp, labels, nil)
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(v.violations), values...)
			desc = prometheus.NewDesc("idemcheck_result", resultHelp, slices.Concat(labels, []string{"result"}), nil)
			for _, r := range verdictResults {
				on := 0.0
				if v.status == r.status {
					on = 1
				}
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, on, slices.Concat(values, []string{string(r.result)})...)
			}
		}
	}
}
