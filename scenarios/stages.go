package scenarios

import (
	"fmt"
	"math"
	"time"
)

// Stage is one stage of a load in stages (load.stages), as k6's ramping
// executors and vegeta's pacers shape one: it lasts Duration and holds
// Rate (open model) or Concurrency (closed model) all along, or, with
// Ramp, goes there linearly from the previous stage's value (from 0 for
// the first stage). Every stage of a load is of one model: each sets
// Rate, or each sets Concurrency.
type Stage struct {
	Duration    Duration `yaml:"duration"`
	Rate        Rate     `yaml:"rate,omitempty"`        // open model: ops per second
	Concurrency int      `yaml:"concurrency,omitempty"` // closed model: workers
	Ramp        bool     `yaml:"ramp,omitempty"`
}

// Bounds of a load in stages.
const (
	// MaxStages is the most stages a load may have.
	MaxStages = 100
	// MaxStageRate is the highest rate a stage may ask, in ops per
	// second, for the whole run (a sharded run's shards share it).
	MaxStageRate Rate = 10_000_000
	// MaxStageConcurrency is the most workers a stage may ask, for the
	// whole run.
	MaxStageConcurrency = 100_000
)

// StagesDuration is how long the stages of l last together; 0 without
// stages, and the longest duration there is when their sum is longer.
func (l Load) StagesDuration() time.Duration {
	var total time.Duration
	for _, st := range l.Stages {
		d := max(time.Duration(st.Duration), 0)
		if total > math.MaxInt64-d {
			return math.MaxInt64
		}
		total += d
	}
	return total
}

// Open reports whether l is an open-model load: a rate, or stages of
// rates.
func (l Load) Open() bool {
	if len(l.Stages) > 0 {
		return l.Stages[0].Rate > 0
	}
	return l.Rate > 0
}

// MaxConcurrency is the most workers a closed-model load runs at once:
// its concurrency, or the highest of its stages'.
func (l Load) MaxConcurrency() int {
	n := l.Concurrency
	for _, st := range l.Stages {
		n = max(n, st.Concurrency)
	}
	return n
}

// stagesDefaults makes a load in stages last as long as its stages.
func (s *Scenario) stagesDefaults() {
	if l := &s.Load; len(l.Stages) > 0 && l.Duration == 0 {
		l.Duration = Duration(l.StagesDuration())
	}
}

// stages checks load.stages: exclusive with load.rate, load.concurrency
// and load.duration; at most MaxStages; each with a duration above 0 and
// either a rate within (0, MaxStageRate] or a concurrency within
// [1, MaxStageConcurrency], all of one model; their total within what a
// duration can hold.
func (c *checker) stages() {
	l := c.s.Load
	if len(l.Stages) == 0 {
		return
	}
	const hint = "each stage gives its own duration and its rate (or concurrency); leave load.rate, load.concurrency and load.duration out"
	if l.Rate != 0 {
		c.add("load.rate", "set load.rate or load.stages, not both", hint, "load.stages")
	}
	if l.Concurrency != 0 {
		c.add("load.concurrency", "set load.concurrency or load.stages, not both", hint, "load.stages")
	}
	if c.s.set("load.duration") {
		c.add("load.duration", "set load.duration or load.stages, not both: the load lasts as long as its stages", hint, "load.stages")
	}
	if len(l.Stages) > MaxStages {
		c.add("load.stages", fmt.Sprintf("%d stages: at most %d", len(l.Stages), MaxStages), "join stages that hold one rate, or ramp over longer stages")
	}
	// the model of the first stage that gives one
	model, open := -1, false
	for i, st := range l.Stages {
		r := st.Rate != 0 || c.s.set(fmt.Sprintf("load.stages[%d].rate", i))
		if r || st.Concurrency != 0 || c.s.set(fmt.Sprintf("load.stages[%d].concurrency", i)) {
			model, open = i, r
			break
		}
	}
	var total time.Duration
	for i, st := range l.Stages {
		at := fmt.Sprintf("load.stages[%d]", i)
		switch {
		case st.Duration <= 0:
			c.add(at+".duration", fmt.Sprintf("a stage's duration must be above 0, got %s", st.Duration), "duration: 30s")
		case total >= 0 && total > math.MaxInt64-st.Duration.Std():
			c.add(at+".duration", "the stages last longer than a duration can hold (about 290 years)", "shorten the stages")
			total = -1 // said once
		case total >= 0:
			total += st.Duration.Std()
		}
		hasRate := st.Rate != 0 || c.s.set(at+".rate")
		hasConc := st.Concurrency != 0 || c.s.set(at+".concurrency")
		switch {
		case hasRate && hasConc:
			c.add(at+".rate", "set rate or concurrency, not both",
				"rate is the open model (arrivals), concurrency the closed model (workers); keep one", at+".concurrency")
			continue
		case !hasRate && !hasConc:
			c.add(at, "set the stage's rate (open model) or concurrency (closed model)", "- {duration: 30s, rate: 200/s} or - {duration: 30s, concurrency: 16}")
			continue
		case hasRate != open:
			c.add(at, "the stages mix the open model (rate) and the closed model (concurrency)",
				"give every stage a rate, or every stage a concurrency", fmt.Sprintf("load.stages[%d]", model))
			continue
		}
		switch {
		case hasRate && (st.Rate <= 0 || st.Rate > MaxStageRate):
			c.add(at+".rate", fmt.Sprintf("a stage's rate must be above 0 and at most %.0f/s, got %s", float64(MaxStageRate), st.Rate),
				"rate: 200/s; to pause, use a stage of a low rate")
		case hasConc && (st.Concurrency < 1 || st.Concurrency > MaxStageConcurrency):
			c.add(at+".concurrency", fmt.Sprintf("a stage's concurrency must be within 1..%d, got %d", MaxStageConcurrency, st.Concurrency),
				"concurrency: 16 runs 16 workers")
		}
	}
}
