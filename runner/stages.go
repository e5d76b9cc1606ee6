package runner

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// A load in stages (load.stages) is paced by a Ramp:
//   - open model: op n is due when the integral of the rate since the
//     load's start reaches n (Ramp.Due); a stage holds its rate, or ramps
//     to it linearly from the previous stage's (from 0 for the first);
//   - closed model: the workers the busiest stage needs are started at
//     once, and worker i takes ops only while the stage's value, rounded
//     to the nearest, is above i (Ramp.Wake): the others wait idle, and a
//     worker past the count finishes the op it holds first;
//   - the load ends with the last stage, or at load.duration when it is
//     shorter (--duration), or after load.ops, whichever comes first;
//   - a shard follows the run's schedule of ops in the open model, and so
//     makes its part of every stage's rate; in the closed model it runs
//     its part of every stage's workers (part: at least one).

// StageObserver is an Observer that also hears, before Start, the stages
// of a load in stages, as the scenario gives them for the whole run (the
// same as history.Meta.Stages), so that progress can name the stage under
// way from the time since Start.
type StageObserver interface {
	Stages(stages []history.Stage)
}

// Stages tells every observer that hears stages.
func (all Observers) Stages(stages []history.Stage) {
	for _, o := range all {
		if so, ok := o.(StageObserver); ok {
			so.Stages(stages)
		}
	}
}

// metaStages are l's stages as a history records them; nil for a flat
// load.
func metaStages(l scenarios.Load) []history.Stage {
	var out []history.Stage
	for _, st := range l.Stages {
		out = append(out, history.Stage{Duration: st.Duration.Std(), Rate: float64(st.Rate), Concurrency: st.Concurrency, Ramp: st.Ramp})
	}
	return out
}

// announceStages tells obs the stages of the load, if it hears them.
func announceStages(obs Observer, stages []history.Stage) {
	if so, ok := obs.(StageObserver); ok && len(stages) > 0 {
		so.Stages(stages)
	}
}

// stage compiles load.stages into r.ramp, cut at the load's end (the
// stages' end, or load.duration when shorter), the closed model's values
// the shard's part of each stage's workers. It makes r.load say what the
// loops read of a flat load: the load's end in Duration, the model in
// Rate (the first stage's) or Concurrency (the most workers a stage
// asks: the workers started).
func (r *run) stage(l scenarios.Load) error {
	if len(l.Stages) == 0 {
		return nil
	}
	if l.Rate > 0 || l.Concurrency > 0 {
		return errors.New("load: stages and a rate or concurrency besides: the stages give the load's rate or concurrency")
	}
	open := l.Open()
	prev := 0.0
	for i, st := range l.Stages {
		v := float64(st.Rate)
		if !open {
			v = float64(part(r.shard, st.Concurrency))
		}
		if st.Duration <= 0 || v <= 0 || (open && st.Concurrency != 0) || (!open && st.Rate != 0) {
			return fmt.Errorf("load.stages[%d]: want a duration above 0 and a rate above 0, or a concurrency of 1 or more (every stage of one model)", i)
		}
		from := v
		if st.Ramp {
			from = prev
		}
		r.ramp = append(r.ramp, Step{Duration: st.Duration.Std(), From: from, To: v})
		prev = v
	}
	end := time.Duration(l.StagesDuration())
	if d := l.Duration.Std(); d > 0 && d < end {
		end = d
	}
	r.ramp = r.ramp.Cut(end)
	r.load.Duration = scenarios.Duration(end)
	if open {
		r.load.Rate = l.Stages[0].Rate
	} else {
		r.load.Concurrency = l.MaxConcurrency()
	}
	return nil
}

// holdStages waits, in the open model of a load in stages, for the
// load's end once its last op is sent: the load lasts as long as its
// stages, not until the last op they make due, so that the last stage's
// figures are of all of it. A flat load, a load stopped early (a spill
// that failed) or a cancelled run does not wait.
func (r *run) holdStages(end time.Duration) {
	if r.ramp == nil || r.stop.Load() {
		return
	}
	left := end - r.since()
	if left <= 0 {
		return
	}
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.ctx.Done():
	}
}

// turns are the closed model's workers' turns in a load in stages: each
// waits, idle, until the stage under way needs it (Ramp.Wake).
type turns struct {
	r    *run
	ramp Ramp
	// done is closed once the load is over (its ops all taken, its
	// duration passed or its spill failed: r.stop), which wakes the idle.
	done     chan struct{}
	doneOnce sync.Once
	quit     chan struct{}
	watching sync.WaitGroup
}

// stopPoll is how often turns look at r.stop, to wake the idle workers
// once the load is stopped.
const stopPoll = 10 * time.Millisecond

// newTurns returns the turns of r's workers; nil for a flat load, whose
// workers all work. Its end must be called once the workers are done.
func (r *run) newTurns() *turns {
	if r.ramp == nil {
		return nil
	}
	t := &turns{r: r, ramp: r.ramp, done: make(chan struct{}), quit: make(chan struct{})}
	t.watching.Go(func() {
		tick := time.NewTicker(stopPoll)
		defer tick.Stop()
		for {
			select {
			case <-t.quit:
				return
			case <-tick.C:
				if r.stop.Load() {
					t.over()
					return
				}
			}
		}
	})
	return t
}

// wait holds worker w (number i) until its turn; false when it has none
// left (the last stage is over, or the load or the run ended first).
func (t *turns) wait(w *worker, i int) bool {
	if t == nil {
		return true
	}
	for {
		now := t.r.since()
		at, ok := t.ramp.Wake(i, now)
		if !ok {
			return false
		}
		if at <= now {
			return true
		}
		if w.timer == nil {
			w.timer = time.NewTimer(at - now)
		} else {
			w.timer.Reset(at - now)
		}
		select {
		case <-w.timer.C:
		case <-t.done:
			w.timer.Stop()
			return false
		case <-t.r.ctx.Done():
			w.timer.Stop()
			return false
		}
	}
}

// over wakes the idle workers for good: the load is over.
func (t *turns) over() {
	if t != nil {
		t.doneOnce.Do(func() { close(t.done) })
	}
}

// end stops the watch on r.stop; the workers are done.
func (t *turns) end() {
	if t != nil {
		close(t.quit)
		t.watching.Wait()
	}
}

// writeStages writes a load in stages for a dry run: the model, then a
// line per stage.
func writeStages(w io.Writer, l scenarios.Load, size string) {
	model, unit := "closed", "workers"
	if l.Open() {
		model, unit = "open", "ops/s"
	}
	fmt.Fprintf(w, "load: %s, %s model in %d stages\n", size, model, len(l.Stages))
	prev := 0.0
	for i, st := range l.Stages {
		v := float64(st.Rate)
		if !l.Open() {
			v = float64(st.Concurrency)
		}
		if st.Ramp {
			fmt.Fprintf(w, "  stage %d: %s, ramp %g → %g %s\n", i+1, time.Duration(st.Duration), prev, v, unit)
		} else {
			fmt.Fprintf(w, "  stage %d: %s at %g %s\n", i+1, time.Duration(st.Duration), v, unit)
		}
		prev = v
	}
}
