package reports

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck/checks"
)

// What every format says the same way: the headline over several
// scenarios, a scenario's mark, a threshold with its units. They read the
// result the judgement decided; they decide nothing.

// tally counts scenarios by result.
type tally struct {
	total, passed, failed, inconclusive int
	interrupted                         bool
}

func tallyOf(ss []*Summary) tally {
	t := tally{total: len(ss)}
	for _, s := range ss {
		switch s.Result {
		case checks.Met:
			t.passed++
		case checks.Inconclusive:
			t.inconclusive++
		default: // not_met, errored
			t.failed++
		}
		t.interrupted = t.interrupted || s.Interrupted
	}
	return t
}

// headline sums up a run of several scenarios in one line: "2 of 14
// scenarios failed", "All 3 scenarios passed".
func headline(ss []*Summary) string {
	t := tallyOf(ss)
	noun := func(n int) string {
		if n == 1 {
			return "scenario"
		}
		return "scenarios"
	}
	var h string
	switch {
	case t.total == 0:
		h = "No scenario ran"
	case t.total == 1:
		h = "1 scenario " + resultWord(ss[0].Result)
	case t.failed == 0 && t.inconclusive == 0:
		h = fmt.Sprintf("All %d scenarios passed", t.total)
	case t.failed == 0:
		h = fmt.Sprintf("%d of %d %s inconclusive", t.inconclusive, t.total, noun(t.total))
	default:
		h = fmt.Sprintf("%d of %d %s failed", t.failed, t.total, noun(t.total))
		if t.inconclusive > 0 {
			h += fmt.Sprintf(", %d inconclusive", t.inconclusive)
		}
	}
	if t.interrupted {
		h += " (interrupted)"
	}
	return h
}

// mark is a scenario's sign: passed (an expected violation caught counts
// as passed), failed or could not run, inconclusive.
func mark(r checks.Result) string {
	switch r {
	case checks.Met:
		return "✅"
	case checks.Inconclusive:
		return "⚠️"
	}
	return "❌"
}

// resultWord is a result in plain words.
func resultWord(r checks.Result) string {
	switch r {
	case checks.Met:
		return "passed"
	case checks.NotMet:
		return "failed"
	case checks.Inconclusive:
		return "inconclusive"
	case Errored:
		return "could not run"
	}
	return string(r)
}

// expectedViolation reports whether s expected a violation and caught it:
// its failing verdicts are the point of the scenario.
func expectedViolation(s *Summary) bool {
	return s.Scenario.Expect == "violation" && s.Result == checks.Met
}

// quantity is a value with its unit: "53.0 ms", "2.5%".
func quantity(v float64, unit string) string {
	switch unit {
	case "ms":
		return trimZeros(strconv.FormatFloat(v, 'f', msDigits(v), 64)) + " ms"
	case "ratio":
		return strconv.FormatFloat(v*100, 'f', -1, 64) + "%"
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + " " + unit
}

// trimZeros drops the zeros ending a decimal fraction: "40.0" is "40".
func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

func msDigits(v float64) int {
	switch {
	case v >= 100:
		return 0
	case v >= 10:
		return 1
	}
	return 2
}

// thresholdName is a threshold as people call it: "p99 latency",
// "error rate".
func thresholdName(t checks.Threshold) string {
	if t.Unit == "ms" {
		return t.Name + " latency"
	}
	return strings.ReplaceAll(t.Name, "_", " ")
}

// thresholdLine is "p99 latency 53.0 ms, limit 40 ms".
func thresholdLine(t checks.Threshold) string {
	return fmt.Sprintf("%s %s, limit %s", thresholdName(t), quantity(t.Actual, t.Unit), quantity(t.Limit, t.Unit))
}

// verdictName is "exactly_once on ledger".
func verdictName(v checks.Verdict) string { return v.Invariant + onOracle(v.Oracle) }
