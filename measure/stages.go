package measure

import (
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// Stage is what one stage of a load in stages (history.Meta.Stages) asked
// for and what it achieved, counted by the intended send of each op's
// first attempt (when the open model's schedule meant it to go, when a
// closed-model worker took it): an op falls in the stage its first
// attempt was meant to start in.
type Stage struct {
	// Stage numbers it from 1; it ran from StartMS to StartMS+DurationMS
	// after the load's start, as planned.
	Stage      int     `json:"stage"`
	StartMS    float64 `json:"start_ms"`
	DurationMS float64 `json:"duration_ms"`
	// Ramp is true when the stage went linearly from the previous
	// stage's value (From) to its own; else it held its own all along.
	Ramp bool `json:"ramp,omitempty"`
	// Rate is the open model's target, in ops per second (FromRate where
	// a ramp started); Concurrency the closed model's, in workers
	// (FromConcurrency).
	Rate            float64 `json:"rate,omitempty"`
	FromRate        float64 `json:"from_rate,omitempty"`
	Concurrency     int     `json:"concurrency,omitempty"`
	FromConcurrency int     `json:"from_concurrency,omitempty"`
	// RanMS is how much of the stage ran: DurationMS, less when the load
	// ended within it (an interruption, --duration, load.ops), 0 when it
	// ended before it.
	RanMS float64 `json:"ran_ms"`
	// Ops are the ops of the stage, OpsPerSecond them over RanMS.
	Ops          int     `json:"ops"`
	OpsPerSecond float64 `json:"ops_per_second"`
	// TargetOps is how many ops the open model's schedule put in what ran
	// of the stage (the integral of its rate); 0 in the closed model.
	TargetOps float64 `json:"target_ops,omitempty"`
	// Achieved is Ops / TargetOps in the open model (1 when the stage's
	// rate was held); 0 in the closed model or when nothing was due.
	Achieved float64 `json:"achieved,omitempty"`
}

// StageAt is the index of the stage of ss under way at t after the
// load's start; -1 before it or past the last.
func StageAt(ss []history.Stage, t time.Duration) int {
	if t < 0 {
		return -1
	}
	var start time.Duration
	for i, s := range ss {
		if t < start+s.Duration {
			return i
		}
		start += s.Duration
	}
	return -1
}

// stageTally counts ops by the stage their first attempt was meant to
// start in.
type stageTally struct {
	ops []int // per stage of the history's Meta.Stages
}

// add counts an op whose first attempt was intended at t, of a run in
// stages ss.
func (st *stageTally) add(ss []history.Stage, t time.Duration) {
	if len(ss) == 0 {
		return
	}
	if st.ops == nil {
		st.ops = make([]int, len(ss))
	}
	if i := StageAt(ss, t); i >= 0 && i < len(st.ops) {
		st.ops[i]++
	}
}

// stages are the figures of each stage of the run meta describes; nil for
// a flat load.
func (st *stageTally) stages(meta history.Meta) []Stage {
	if len(meta.Stages) == 0 {
		return nil
	}
	ran := time.Duration(0)
	if !meta.Ended.IsZero() && meta.Ended.After(meta.Started) {
		ran = meta.Ended.Sub(meta.Started)
	}
	open := meta.Stages[0].Rate > 0
	out := make([]Stage, len(meta.Stages))
	var start time.Duration
	var prevRate float64
	var prevConc int
	for i, s := range meta.Stages {
		f := Stage{Stage: i + 1, StartMS: MS(start), DurationMS: MS(s.Duration), Ramp: s.Ramp,
			Rate: s.Rate, Concurrency: s.Concurrency}
		if s.Ramp {
			f.FromRate, f.FromConcurrency = prevRate, prevConc
		}
		if i < len(st.ops) {
			f.Ops = st.ops[i]
		}
		d := min(max(ran-start, 0), s.Duration)
		f.RanMS = MS(d)
		if d > 0 {
			f.OpsPerSecond = float64(f.Ops) / d.Seconds()
		}
		if open && d > 0 {
			from := s.Rate
			if s.Ramp {
				from = prevRate
			}
			// the ops due in the first d of a rate going linearly from
			// from to s.Rate over the stage
			x, full := d.Seconds(), s.Duration.Seconds()
			f.TargetOps = from*x + (s.Rate-from)*x*x/(2*full)
			if f.TargetOps > 0 {
				f.Achieved = float64(f.Ops) / f.TargetOps
			}
		}
		out[i] = f
		start += s.Duration
		prevRate, prevConc = s.Rate, s.Concurrency
	}
	return out
}
