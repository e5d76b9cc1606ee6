package reports

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/measure"
)

// Progress renders a run's live progress: its plan when it starts, the
// counters after a bar, and a status line for logs. It holds what the
// run announced; the counts come from a measure.Tally at each call.
type Progress struct {
	// Start is when the load started.
	Start time.Time
	// Total is the ops planned, 0 when bound by duration.
	Total int64
	// Dur is load.duration, 0 when bound by ops.
	Dur time.Duration
	// Stages are a load in stages', empty for a flat load.
	Stages []history.Stage
}

// Plan is what the run will do: "100 ops", "for 30s", or both.
func (p Progress) Plan() string {
	switch {
	case p.Total > 0 && p.Dur > 0:
		return fmt.Sprintf("%d ops or %s, whichever comes first", p.Total, p.Dur)
	case p.Total > 0:
		return fmt.Sprintf("%d ops", p.Total)
	}
	return fmt.Sprintf("for %s", p.Dur)
}

// Counters are t's counters at now: the stage, rate, faults, retries,
// answers, p99 and indeterminate ops, joined by " · ".
func (p Progress) Counters(now time.Time, t *measure.Tally) string {
	n := t.Counts()
	parts := []string{fmt.Sprintf("%.0f ops/s", p.rate(now, n.Ops))}
	if st := p.Stage(now); st != "" {
		parts = append([]string{st}, parts...)
	}
	if n.Attempts > 0 {
		parts = append(parts, fmt.Sprintf("faults %d", n.Faults), fmt.Sprintf("retries %d", n.Retries),
			fmt.Sprintf("4xx %d", n.S4xx), fmt.Sprintf("5xx %d", n.S5xx))
	}
	if q, ok := t.P99(); ok {
		parts = append(parts, fmt.Sprintf("p99 %.1fms", measure.MS(q)))
	}
	if n.Indeterminate > 0 {
		parts = append(parts, fmt.Sprintf("indeterminate %d", n.Indeterminate))
	}
	return strings.Join(parts, " · ")
}

// Status is one line of progress for logs, at now: the ops done against
// the plan, the time elapsed, and the counters.
func (p Progress) Status(now time.Time, t *measure.Tally) string {
	el, ops := now.Sub(p.Start).Truncate(time.Second), t.Counts().Ops
	done := fmt.Sprintf("%d ops", ops)
	switch {
	case p.Total > 0:
		done = fmt.Sprintf("%d/%d ops", ops, p.Total)
	case p.Dur > 0:
		done = fmt.Sprintf("%s/%s, %d ops", el, p.Dur, ops)
	}
	return fmt.Sprintf("%s after %s; %s", done, el, p.Counters(now, t))
}

// rate is ops per second since the start, at now.
func (p Progress) rate(now time.Time, ops int64) float64 {
	el := now.Sub(p.Start).Seconds()
	if el <= 0 {
		return 0
	}
	return float64(ops) / el
}

// Stage names the stage under way at now, and its target: "stage 2/3
// ramp to 200 ops/s"; "" for a flat load, or past the last stage.
func (p Progress) Stage(now time.Time) string {
	i := measure.StageAt(p.Stages, now.Sub(p.Start))
	if i < 0 {
		return ""
	}
	s := p.Stages[i]
	target := fmt.Sprintf("%d workers", s.Concurrency)
	if s.Rate > 0 {
		target = strconv.FormatFloat(s.Rate, 'f', -1, 64) + " ops/s"
	}
	if s.Ramp {
		target = "ramp to " + target
	}
	return fmt.Sprintf("stage %d/%d %s", i+1, len(p.Stages), target)
}
