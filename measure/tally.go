package measure

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/idemcheck/idemcheck/history"
)

// Tally counts a run as it goes, for live progress: ops by how they
// ended (OpDone) and, when the runner reports attempts (AttemptDone),
// faults, retries, 4xx and 5xx answers and the clean attempts' latency.
// It has the methods of runner.Observer's OpDone and
// runner.AttemptObserver, and is safe for concurrent use; its zero value
// is ready.
type Tally struct {
	ops, acked, indeterminate, rejected, notSent atomic.Int64
	attempts, faults, retries, s4xx, s5xx        atomic.Int64

	mu   sync.Mutex
	hist *hdrhistogram.Histogram
}

// Counts are a Tally's counters at one moment.
type Counts struct {
	// Ops ended so far, and how: Acked, Rejected, NotSent, Indeterminate.
	Ops, Acked, Rejected, NotSent, Indeterminate int64
	// Attempts made so far; Faults injected in them (replays left out),
	// Retries (attempts after an op's first, replays left out), and the
	// answers by class.
	Attempts, Faults, Retries, S4xx, S5xx int64
}

// OpDone counts op as ended in state.
func (t *Tally) OpDone(op int, state history.OpState) {
	t.ops.Add(1)
	switch state {
	case history.Acked:
		t.acked.Add(1)
	case history.Rejected:
		t.rejected.Add(1)
	case history.NotSent:
		t.notSent.Add(1)
	default:
		t.indeterminate.Add(1)
	}
}

// AttemptDone counts a: its fault, whether it is a retry, its answer's
// class and, when clean and answered, its latency.
func (t *Tally) AttemptDone(a history.Attempt) {
	t.attempts.Add(1)
	switch {
	case history.IsReplay(a.Fault):
	case a.Fault != "":
		t.faults.Add(1)
	}
	if a.N > 1 && !history.IsReplay(a.Fault) {
		t.retries.Add(1)
	}
	if a.Outcome != history.OK {
		return
	}
	switch {
	case a.Status >= 500:
		t.s5xx.Add(1)
	case a.Status >= 400:
		t.s4xx.Add(1)
	}
	if a.Fault == "" {
		t.mu.Lock()
		if t.hist == nil {
			t.hist = NewHistogram()
		}
		Record(t.hist, a.Latency())
		t.mu.Unlock()
	}
}

// Counts are the counters now.
func (t *Tally) Counts() Counts {
	return Counts{
		Ops: t.ops.Load(), Acked: t.acked.Load(), Rejected: t.rejected.Load(), NotSent: t.notSent.Load(), Indeterminate: t.indeterminate.Load(),
		Attempts: t.attempts.Load(), Faults: t.faults.Load(), Retries: t.retries.Load(), S4xx: t.s4xx.Load(), S5xx: t.s5xx.Load(),
	}
}

// P99 is the clean answered attempts' 99th percentile latency so far;
// false before the first.
func (t *Tally) P99() (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hist == nil || t.hist.TotalCount() == 0 {
		return 0, false
	}
	return micros(t.hist.ValueAtQuantile(99)), true
}
