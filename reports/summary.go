package reports

import (
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/measure"
)

// FormatVersion is the version of the JSON report schema.
const FormatVersion = 1

// Summary is everything a report shows about one scenario's run: what
// ran, what was measured, and the judgement, already decided.
type Summary struct {
	FormatVersion int          `json:"format_version"`
	Tool          string       `json:"tool"`
	RunID         string       `json:"run_id"`
	Scenario      ScenarioInfo `json:"scenario"`
	Seed          uint64       `json:"seed"`
	KeyNonce      uint64       `json:"key_nonce"`
	Started       time.Time    `json:"started"`
	Ended         time.Time    `json:"ended"`
	Interrupted   bool         `json:"interrupted"`
	// InterruptedIn is the phase an interrupted run was stopped in
	// (history.PhaseLoad, PhaseQuiet, PhaseReading, PhaseMerge).
	InterruptedIn string `json:"interrupted_in,omitempty"`
	// Aborted says why load.abort_on_fail stopped the load early, and
	// AbortedAt when from its start; "" for a load that ran its course.
	Aborted   string        `json:"aborted,omitempty"`
	AbortedAt time.Duration `json:"aborted_at_ns,omitempty"`
	// Rerun is the command line that repeats the run; "" when not known.
	Rerun string `json:"rerun,omitempty"`

	Load         measure.Load         `json:"load"`
	Faults       []measure.FaultCount `json:"faults"`
	Statuses     []measure.Count      `json:"statuses"`
	Errors       []measure.Count      `json:"errors"`
	Latency      Latency              `json:"latency"`
	Verdicts     []checks.Verdict     `json:"verdicts"`
	Thresholds   []checks.Threshold   `json:"thresholds"`
	Findings     []checks.Finding     `json:"findings"`
	Warnings     []string             `json:"warnings"`
	Observations []history.Reading    `json:"observations"`

	// Calibration is what was measured before the load to resolve the
	// faults' relative parameters; nil when nothing was.
	Calibration *history.Calibration `json:"calibration,omitempty"`

	Result checks.Result `json:"result"`
	// Why explains Result in one sentence.
	Why string `json:"why"`
	// Error says why the scenario could not run (a configuration error, an
	// unreachable target) when Result is Errored; "" otherwise.
	Error string `json:"error,omitempty"`

	// Nemesis are the windows in which the scenario's nemesis stopped
	// and restarted the target; left out when it declares none.
	Nemesis []history.NemesisWindow `json:"nemesis,omitempty"`
	// ConsumerCut is what a queue scenario's consumer_cut did; nil
	// without one.
	ConsumerCut *history.ConsumerCut `json:"consumer_cut,omitempty"`

	// Charts are the load's charts for the HTML report; nil when the
	// summary was read back from JSON (the JSON schema leaves them out):
	// its HTML report shows the verdicts and evidence without them.
	Charts *measure.Charts `json:"-"`

	// Stages are the figures of each stage of a load in stages; left
	// out for a flat load.
	Stages []measure.Stage `json:"stages,omitempty"`
	// Histograms are the run's latency histograms (run --hgrm); nil
	// when the summary was read back from JSON, or the run did not run.
	Histograms *measure.Histograms `json:"-"`
}

// Latency is measure.Latency as reports give it, in ms.
type Latency struct {
	Attempt Percentiles `json:"attempt"`
	Op      Percentiles `json:"op"`
}

// Percentiles are measure.Percentiles as reports give them, in ms.
type Percentiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
	Mean  float64 `json:"mean_ms"`
}

func latencyOf(l measure.Latency) Latency {
	return Latency{Attempt: percentilesOf(l.Attempt), Op: percentilesOf(l.Op)}
}

func percentilesOf(p measure.Percentiles) Percentiles {
	return Percentiles{Count: p.Count, P50: measure.MS(p.P50), P90: measure.MS(p.P90), P99: measure.MS(p.P99),
		P999: measure.MS(p.P999), Max: measure.MS(p.Max), Mean: p.MeanUS / 1000}
}

// Errored is the Result of a scenario that could not run: it was never
// judged, so a report says why instead of showing verdicts.
const Errored checks.Result = "error"

// ScenarioInfo names what ran.
type ScenarioInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Source      string `json:"source,omitempty"`
	Expect      string `json:"expect"`
	Target      string `json:"target"`
}

// New assembles the summary of a judged run from its history, its
// measures and its judgement. It decides nothing.
func New(tool string, h *history.History, m measure.Measures, j checks.Judgement) *Summary {
	return NewFrom(tool, h.Meta, h.Readings, m, j, measure.ChartsOf(h))
}

// NewFrom assembles the summary of a judged run from what describes it
// (a history's Meta and readings), its measures, judgement and charts:
// what a run judged in parts (history.Split) has.
func NewFrom(tool string, meta history.Meta, readings []history.Reading, m measure.Measures, j checks.Judgement, charts *measure.Charts) *Summary {
	s := &Summary{
		FormatVersion: FormatVersion,
		Tool:          tool,
		RunID:         meta.RunID,
		Scenario: ScenarioInfo{Name: meta.Scenario, Description: meta.Description, Source: meta.Source,
			Expect: meta.Judge.Expect, Target: meta.Target},
		Seed:         meta.Seed,
		KeyNonce:     meta.KeyNonce,
		Started:      meta.Started,
		Ended:        meta.Ended,
		Interrupted:  meta.Interrupted,
		Rerun:        meta.Rerun,
		Load:         m.Load,
		Faults:       nonNil(m.Faults),
		Statuses:     nonNil(m.Statuses),
		Errors:       nonNil(m.Errors),
		Latency:      latencyOf(m.Latency),
		Verdicts:     nonNil(j.Verdicts),
		Thresholds:   nonNil(j.Thresholds),
		Findings:     nonNil(j.Findings),
		Warnings:     nonNil(j.Warnings),
		Observations: nonNil(readings),
		Calibration:  meta.Calibration,
		Result:       j.Result,
		Why:          j.Why,
		Charts:       charts,
		Nemesis:      meta.Nemesis,
		ConsumerCut:  meta.ConsumerCut,
		Stages:       m.Stages,
		Histograms:   m.Histograms,
	}
	s.InterruptedIn = meta.InterruptedIn
	s.Aborted, s.AbortedAt = meta.Aborted, meta.AbortedAt
	return s
}

// NotRun is the summary of a scenario that could not run (bad
// configuration, an unreachable target), so that CI still receives a
// report naming it and saying why. name and target may be "" when not
// known; err must not be nil.
func NotRun(tool, name, target string, started time.Time, err error) *Summary {
	if name == "" {
		name = "idemcheck"
	}
	return &Summary{
		FormatVersion: FormatVersion,
		Tool:          tool,
		Scenario:      ScenarioInfo{Name: name, Target: target},
		Started:       started,
		Ended:         started,
		Faults:        []measure.FaultCount{},
		Statuses:      []measure.Count{},
		Errors:        []measure.Count{},
		Verdicts:      []checks.Verdict{},
		Thresholds:    []checks.Threshold{},
		Findings:      []checks.Finding{},
		Warnings:      []string{},
		Observations:  []history.Reading{},
		Result:        Errored,
		Why:           err.Error(),
		Error:         err.Error(),
	}
}

// nonNil keeps JSON arrays from being null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
