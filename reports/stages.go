package reports

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck/measure"
)

// stageLine is one stage of a load in stages in one line: when it ran,
// its target, and what it achieved. The open model's stage says how many
// ops were sent at what rate, and their share of the ops its schedule had
// due; the closed model's, how many ops its workers did:
//
//	stage 2 (10–20 s): ramp 100 → 300 ops/s: sent 2000 ops, 200.0 ops/s (100.0% of 2000 due)
//	stage 1 (0–30 s): 8 workers: 1523 ops done, 50.8 ops/s
func stageLine(s measure.Stage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "stage %d (%s–%s s): ", s.Stage, stageSeconds(s.StartMS), stageSeconds(s.StartMS+s.DurationMS))
	open := s.Rate > 0
	switch {
	case open && s.Ramp:
		fmt.Fprintf(&b, "ramp %s → %s ops/s", decimal(s.FromRate), decimal(s.Rate))
	case open:
		fmt.Fprintf(&b, "%s ops/s", decimal(s.Rate))
	case s.Ramp:
		fmt.Fprintf(&b, "ramp %d → %d workers", s.FromConcurrency, s.Concurrency)
	default:
		fmt.Fprintf(&b, "%d workers", s.Concurrency)
	}
	if s.RanMS <= 0 {
		b.WriteString(": not reached, the load ended before it")
		return b.String()
	}
	if s.RanMS < s.DurationMS {
		fmt.Fprintf(&b, ", cut short after %s s", stageSeconds(s.RanMS))
	}
	if open {
		fmt.Fprintf(&b, ": sent %d ops, %.1f ops/s (%.1f%% of %.0f due)", s.Ops, s.OpsPerSecond, 100*s.Achieved, s.TargetOps)
	} else {
		fmt.Fprintf(&b, ": %d ops done, %.1f ops/s", s.Ops, s.OpsPerSecond)
	}
	return b.String()
}

// stageSeconds is ms in seconds, to the ms, without trailing zeros: "2.5".
func stageSeconds(ms float64) string {
	return trimZeros(strconv.FormatFloat(ms/1000, 'f', 3, 64))
}

// decimal is v without an exponent: "0.5", "1000000".
func decimal(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
