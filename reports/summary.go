package reports

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
)

// FormatVersion is the version of the JSON report schema.
const FormatVersion = 1

// Result is a run's overall result against its expectation.
type Result string

const (
	// Met: every expectation held (exit 0).
	Met Result = "met"
	// NotMet: an invariant or threshold failed, or an expected violation was
	// not caught (exit 1).
	NotMet Result = "not_met"
	// Inconclusive: a check could not decide (exit 3).
	Inconclusive Result = "inconclusive"
)

// Summary is everything a report shows about one scenario's run.
type Summary struct {
	FormatVersion int          `json:"format_version"`
	Tool          string       `json:"tool"`
	Scenario      ScenarioInfo `json:"scenario"`
	Seed          uint64       `json:"seed"`
	KeyNonce      uint64       `json:"key_nonce"`
	Started       time.Time    `json:"started"`
	Ended         time.Time    `json:"ended"`
	Interrupted   bool         `json:"interrupted"`

	Load         Load                  `json:"load"`
	Faults       []Count               `json:"faults"`
	Statuses     []Count               `json:"statuses"`
	Errors       []Count               `json:"errors"`
	Latency      Latency               `json:"latency"`
	Verdicts     []checks.Verdict      `json:"verdicts"`
	Thresholds   []Threshold           `json:"thresholds"`
	Observations []*checks.Observation `json:"observations"`

	Result Result `json:"result"`
	// Why explains Result in one sentence.
	Why string `json:"why"`
}

// ScenarioInfo names what ran.
type ScenarioInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Source      string `json:"source,omitempty"`
	Expect      string `json:"expect"`
	Target      string `json:"target"`
}

// Load counts what was sent and how ops ended.
type Load struct {
	Ops           int     `json:"ops"`
	Attempts      int     `json:"attempts"`
	Retries       int     `json:"retries"`
	Replays       int     `json:"replays"` // attempts sent again after a 2xx on purpose (operation.replay)
	Acked         int     `json:"acked"`
	NotSent       int     `json:"not_sent"`
	Rejected      int     `json:"rejected"` // every answer a 4xx: the API said no
	Indeterminate int     `json:"indeterminate"`
	ErrorRate     float64 `json:"error_rate"` // share of ops without a 2xx
	DurationMS    float64 `json:"duration_ms"`
	OpsPerSecond  float64 `json:"ops_per_second"`
}

// Count is a named count; lists of them are sorted by name.
type Count struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// Percentiles of a latency distribution, in milliseconds.
type Percentiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
	Mean  float64 `json:"mean_ms"`
}

// Latency holds per-attempt (clean attempts only: no fault, an answer) and
// per-op (first intended send to final answer, retries included, replays
// left out) latency, both measured from the intended start so a stalled
// scheduler cannot hide queueing.
type Latency struct {
	Attempt Percentiles `json:"attempt"`
	Op      Percentiles `json:"op"`
}

// Threshold is one latency or error-rate limit and whether it held.
type Threshold struct {
	Name   string  `json:"name"` // "p99", "error_rate"
	Limit  float64 `json:"limit"`
	Actual float64 `json:"actual"`
	Unit   string  `json:"unit"` // "ms" or "ratio"
	OK     bool    `json:"ok"`
}

// Input is what Build needs beyond the history.
type Input struct {
	Tool         string
	Scenario     ScenarioInfo
	Verdicts     []checks.Verdict
	Observations []*checks.Observation
	// Limits are the scenario's thresholds; zero fields are not checked.
	Limits Limits
}

// Limits are latency (per op) and error-rate thresholds.
type Limits struct {
	P50, P90, P99, P999, Max time.Duration
	ErrorRate                *float64
}

// Build computes the summary of a checked run.
func Build(h *history.History, in Input) *Summary {
	s := &Summary{
		FormatVersion: FormatVersion,
		Tool:          in.Tool,
		Scenario:      in.Scenario,
		Seed:          h.Meta.Seed,
		KeyNonce:      h.Meta.KeyNonce,
		Started:       h.Meta.Started,
		Ended:         h.Meta.Ended,
		Interrupted:   h.Meta.Interrupted,
		Verdicts:      in.Verdicts,
		Observations:  in.Observations,
	}
	if s.Verdicts == nil {
		s.Verdicts = []checks.Verdict{}
	}
	if s.Observations == nil {
		s.Observations = []*checks.Observation{}
	}
	faults := map[string]int{}
	statuses := map[string]int{}
	errs := map[string]int{}
	attemptH := newHist()
	opH := newHist()
	for op := range h.Ops {
		as := h.AttemptsOf(op)
		if len(as) == 0 {
			continue
		}
		s.Load.Ops++
		s.Load.Attempts += len(as)
		s.Load.Retries += retries(as)
		switch history.State(as) {
		case history.Acked:
			s.Load.Acked++
		case history.NotSent:
			s.Load.NotSent++
		case history.Rejected:
			s.Load.Rejected++
		default:
			s.Load.Indeterminate++
		}
		for i := range as {
			a := &as[i]
			switch {
			case history.IsReplay(a.Fault):
				s.Load.Replays++
			case a.Fault != "":
				faults[a.Fault]++
			}
			if a.Outcome == history.OK {
				statuses[strconv.Itoa(a.Status)]++
				if a.Fault == "" {
					record(attemptH, a.Latency())
				}
			} else {
				statuses[a.Outcome.String()]++
				if a.Fault == "" && a.Err != "" {
					errs[trim(a.Err, 120)]++
				}
			}
		}
		record(opH, history.OpLatency(as))
	}
	s.Faults, s.Statuses, s.Errors = counts(faults), counts(statuses), counts(errs)
	s.Latency = Latency{Attempt: percentiles(attemptH), Op: percentiles(opH)}
	if s.Load.Ops > 0 {
		s.Load.ErrorRate = float64(s.Load.Ops-s.Load.Acked) / float64(s.Load.Ops)
	}
	if !h.Meta.Ended.IsZero() && h.Meta.Ended.After(h.Meta.Started) {
		d := h.Meta.Ended.Sub(h.Meta.Started)
		s.Load.DurationMS = ms(d)
		s.Load.OpsPerSecond = float64(s.Load.Ops) / d.Seconds()
	}
	s.Thresholds = thresholds(in.Limits, s)
	s.Result, s.Why = decide(in.Scenario.Expect, s)
	return s
}

func thresholds(l Limits, s *Summary) []Threshold {
	out := []Threshold{}
	lat := []struct {
		name   string
		limit  time.Duration
		actual float64
	}{
		{"p50", l.P50, s.Latency.Op.P50}, {"p90", l.P90, s.Latency.Op.P90}, {"p99", l.P99, s.Latency.Op.P99},
		{"p99.9", l.P999, s.Latency.Op.P999}, {"max", l.Max, s.Latency.Op.Max},
	}
	for _, t := range lat {
		if t.limit > 0 {
			out = append(out, Threshold{Name: t.name, Limit: ms(t.limit), Actual: t.actual, Unit: "ms", OK: t.actual <= ms(t.limit)})
		}
	}
	if l.ErrorRate != nil {
		out = append(out, Threshold{Name: "error_rate", Limit: *l.ErrorRate, Actual: s.Load.ErrorRate, Unit: "ratio", OK: s.Load.ErrorRate <= *l.ErrorRate})
	}
	return out
}

// decide turns verdicts and thresholds into the run's result.
func decide(expect string, s *Summary) (Result, string) {
	var failed, unknown []string
	for _, v := range s.Verdicts {
		switch v.Status {
		case checks.Fail:
			failed = append(failed, v.Invariant)
		case checks.Unknown:
			unknown = append(unknown, v.Invariant)
		}
	}
	var slow []string
	for _, t := range s.Thresholds {
		if !t.OK {
			slow = append(slow, t.Name)
		}
	}
	if len(slow) > 0 {
		why := fmt.Sprintf("threshold exceeded: %s", strings.Join(slow, ", "))
		if len(failed) > 0 && expect != "violation" {
			why = fmt.Sprintf("invariant violated: %s; %s", strings.Join(failed, ", "), why)
		}
		return NotMet, why
	}
	if expect == "violation" {
		switch {
		case len(failed) > 0:
			return Met, "expected a violation and caught one: " + strings.Join(failed, ", ")
		case len(unknown) > 0:
			return Inconclusive, fmt.Sprintf("expected a violation; none caught, but %s could not decide", strings.Join(unknown, ", "))
		case len(s.Verdicts) == 0:
			return Inconclusive, "expected a violation but the scenario checks no invariant"
		default:
			return NotMet, "expected a violation but every invariant held"
		}
	}
	switch {
	case len(failed) > 0:
		return NotMet, "invariant violated: " + strings.Join(failed, ", ")
	case len(unknown) > 0:
		return Inconclusive, "could not decide: " + strings.Join(unknown, ", ")
	case s.Interrupted:
		return Inconclusive, "every invariant held on what ran, but the run was interrupted before its end"
	}
	return Met, "every invariant held"
}

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
}

// record adds d in µs, clamped to the histogram's range (a latency beyond
// an hour is reported as an hour), where RecordValue cannot fail.
func record(h *hdrhistogram.Histogram, d time.Duration) {
	us := min(max(d.Microseconds(), 1), h.HighestTrackableValue())
	if err := h.RecordValue(us); err != nil {
		panic(fmt.Sprintf("recording %dµs within the histogram's range: %v", us, err))
	}
}

func percentiles(h *hdrhistogram.Histogram) Percentiles {
	if h.TotalCount() == 0 {
		return Percentiles{}
	}
	q := func(p float64) float64 { return float64(h.ValueAtQuantile(p)) / 1000 }
	return Percentiles{
		Count: h.TotalCount(),
		P50:   q(50), P90: q(90), P99: q(99), P999: q(99.9),
		Max:  float64(h.Max()) / 1000,
		Mean: h.Mean() / 1000,
	}
}

func counts(m map[string]int) []Count {
	out := make([]Count, 0, len(m))
	for k, v := range m {
		out = append(out, Count{Name: k, Count: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// retries counts an op's attempts after its first, replays left out.
func retries(as []history.Attempt) int {
	n := 0
	for i := 1; i < len(as); i++ {
		if !history.IsReplay(as[i].Fault) {
			n++
		}
	}
	return n
}
