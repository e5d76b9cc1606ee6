package trial

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/measure"
	"github.com/idemcheck/idemcheck/oracles"
	"github.com/idemcheck/idemcheck/scenarios"
)

// load.abort_on_fail: a staging API found broken is not hammered for the
// rest of the run. While the load runs, a live judge looks at the ops
// that have ended and stops the load (runner.Options.Halt) once a failure
// is proven, never on a guess:
//   - a duplicate effect: at_most_once or exactly_once finds a key with
//     more effects than its ended ops allow, read from the oracle on those
//     keys (an effect is never taken back, so more cannot become fewer);
//     judged only when every op has a key of its own (no key.value
//     template, which may give a later op the same key);
//   - an answer that breaks same_response or payload_mismatch on an ended
//     op (its answers are all in);
//   - a threshold that can no longer hold, whatever the rest of the load
//     does: more ops without a 2xx, or slower than a latency limit, than
//     the limit allows of all the load's ops (measure.SlowAllowed, as the
//     final percentiles are read). Judged when the load's size is known
//     (load.ops, or an open model's rate and duration): the most ops the
//     load can send, so that what is proven over it holds for the ops it
//     did send.
//
// The effects oracles are read at most once a second (effectsEvery), on
// the keys of the ops that ended since the last read: the live judge
// must not load the target it measures. A run the live judge stopped
// whose final judgement finds nothing (effects a store took back, say)
// is inconclusive, never met: checks.Judger.
//
// What needs the whole run (exact_counter, conditional_update, settles,
// processes, missing effects that may still come) is judged at the end,
// as without abort_on_fail.

// abortTick is how often the live judge looks at the ops that ended;
// effectsEvery how often it reads the effects oracles.
const (
	abortTick    = 200 * time.Millisecond
	effectsEvery = time.Second
)

// abortSlack is how far over a latency limit an op must be to count as
// slower than it: the HDR histograms the final percentiles come from
// round a value by at most 0.1%.
const abortSlack = 100 // limit/abortSlack

// abortWatch is the live judge of one load; it is the load's observer
// (runner.OpObserver, runner.AttemptObserver) beside progress and
// metrics.
type abortWatch struct {
	meta    history.Meta
	invs    []history.Invariant       // judged live
	oracles map[string]oracles.Oracle // the effects oracles they read
	total   int                       // the load's ops; 0 when unknown
	limits  []latencyLimit
	rate    *float64 // error_rate's limit
	start   time.Time

	mu     sync.Mutex
	ops    map[int]history.Op
	flying map[int][]history.Attempt
	ended  []endedOp
	failed int // ended ops without a 2xx

	halted  atomic.Bool
	halt    chan struct{}
	why     string
	at      time.Duration
	stopped chan struct{}
	cancel  context.CancelFunc // ends an oracle read under way at stop
	wg      sync.WaitGroup
	read    time.Time // the last effects read
	pending []endedOp // ended ops whose effects are not read yet
}

type endedOp struct {
	op   history.Op
	atts []history.Attempt
}

// latencyLimit is one latency threshold: how many of the load's ops may
// be slower than it, and how many were.
type latencyLimit struct {
	name    string
	limit   time.Duration
	allowed int
	slow    int
}

// newAbortWatch returns the live judge of sc's load, or nil when
// load.abort_on_fail is off.
func newAbortWatch(sc *scenarios.Scenario, ors []oracles.Oracle) *abortWatch {
	if !sc.Load.AbortOnFail {
		return nil
	}
	w := &abortWatch{meta: history.Meta{Scenario: sc.Name, Judge: JudgeOf(sc)}, oracles: map[string]oracles.Oracle{},
		ops: map[int]history.Op{}, flying: map[int][]history.Attempt{}, halt: make(chan struct{}), stopped: make(chan struct{})}
	byName := map[string]oracles.Oracle{}
	for _, o := range ors {
		byName[o.Name()] = o
	}
	ownKeys := sc.Operation.Key.Value == ""
	for _, inv := range w.meta.Judge.Invariants {
		switch inv.Check {
		case checks.SameResponse, checks.PayloadMismatch:
			w.invs = append(w.invs, history.Invariant{Check: inv.Check})
		case checks.AtMostOnce, checks.ExactlyOnce:
			if o := byName[inv.Oracle]; o != nil && ownKeys {
				w.invs = append(w.invs, inv)
				w.oracles[inv.Oracle] = o
			}
		}
	}
	l := sc.Load
	switch {
	case l.Ops > 0:
		w.total = l.Ops
	case l.Rate > 0 && l.Duration > 0 && len(l.Stages) == 0:
		// Op k is due at k/rate and sent when due before the end: the
		// ceiling of rate × duration ops at the most.
		w.total = int(math.Ceil(float64(l.Rate) * time.Duration(l.Duration).Seconds()))
	}
	if w.total > 0 {
		t := w.meta.Judge.Thresholds
		for _, x := range []struct {
			name  string
			limit time.Duration
			pct   float64
		}{{"p50", t.P50, 50}, {"p90", t.P90, 90}, {"p99", t.P99, 99}, {"p99.9", t.P999, 99.9}, {"max", t.Max, 100}} {
			if x.limit > 0 {
				w.limits = append(w.limits, latencyLimit{name: x.name, limit: x.limit, allowed: measure.SlowAllowed(x.pct, w.total)})
			}
		}
		w.rate = t.ErrorRate
	}
	return w
}

// run judges the ended ops every abortTick until the load ends (stop) or
// a failure is proven; it returns at once.
func (w *abortWatch) run(ctx context.Context) {
	w.start = time.Now()
	ctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	w.wg.Go(func() {
		defer cancel()
		tick := time.NewTicker(abortTick)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.stopped:
				return
			case <-w.halt:
				return
			case <-tick.C:
			}
			w.judge(ctx)
		}
	})
}

// stop ends the live judge, an oracle read under way included; what it
// found is in Meta's Aborted, unless it came once the load had ended of
// its own accord (it stopped nothing).
func (w *abortWatch) stop(h *history.History) {
	close(w.stopped)
	w.cancel()
	w.wg.Wait()
	if h != nil && w.halted.Load() {
		w.mu.Lock()
		if w.at < h.Meta.Ended.Sub(h.Meta.Started) {
			h.Meta.Aborted, h.Meta.AbortedAt = w.why, w.at
		}
		w.mu.Unlock()
	}
}

// abort halts the load once, for why.
func (w *abortWatch) abort(why string) {
	if w.halted.Swap(true) {
		return
	}
	w.why, w.at = why, time.Since(w.start) // under w.mu, or alone in judge
	close(w.halt)
}

// Start implements runner.Observer.
func (w *abortWatch) Start(int, time.Duration) {}

// OpStarted implements runner.OpObserver.
func (w *abortWatch) OpStarted(op history.Op) {
	if w.halted.Load() {
		return
	}
	w.mu.Lock()
	w.ops[op.ID] = op
	w.mu.Unlock()
}

// AttemptDone implements runner.AttemptObserver.
func (w *abortWatch) AttemptDone(a history.Attempt) {
	if w.halted.Load() {
		return
	}
	w.mu.Lock()
	w.flying[a.Op] = append(w.flying[a.Op], a)
	w.mu.Unlock()
}

// OpDone implements runner.Observer: the op's attempts are all in; its
// figures count towards the thresholds at once.
func (w *abortWatch) OpDone(id int, state history.OpState) {
	if w.halted.Load() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	op, ok := w.ops[id]
	atts := w.flying[id]
	delete(w.ops, id)
	delete(w.flying, id)
	if !ok || len(atts) == 0 {
		return // never sent: not an op of the measures
	}
	if len(w.invs) > 0 {
		w.ended = append(w.ended, endedOp{op, atts})
	}
	if state != history.Acked {
		w.failed++
		// As the final error rate is judged (failed/ops > limit), over the
		// most ops the load can send: fewer sent makes it only higher.
		if r := w.rate; r != nil && float64(w.failed)/float64(w.total) > *r {
			w.abort(fmt.Sprintf("threshold error_rate: %d ops without a 2xx already exceed the limit %g of the load's %d ops",
				w.failed, *r, w.total))
			return
		}
	}
	lat := history.OpLatency(atts)
	for i := range w.limits {
		l := &w.limits[i]
		if lat <= l.limit+l.limit/abortSlack {
			continue
		}
		l.slow++
		if l.slow > l.allowed {
			w.abort(fmt.Sprintf("threshold %s: %d ops slower than %s already exceed the %d of the load's %d ops the limit allows",
				l.name, l.slow, l.limit, l.allowed, w.total))
			return
		}
	}
}

// judge judges the ops that ended since the last look on their answers,
// and, once a second, the ops ended since the last read on their effects.
func (w *abortWatch) judge(ctx context.Context) {
	w.mu.Lock()
	batch := w.ended
	w.ended = nil
	w.mu.Unlock()
	if w.halted.Load() {
		return
	}
	w.judgeOn(ctx, batch, false)
	w.pending = append(w.pending, batch...)
	if len(w.pending) > 0 && time.Since(w.read) >= effectsEvery {
		w.read = time.Now()
		pending := w.pending
		w.pending = nil
		w.judgeOn(ctx, pending, true)
	}
}

// judgeOn judges ops on the invariants that read an effects oracle
// (effects) or on those that read the answers alone.
func (w *abortWatch) judgeOn(ctx context.Context, ops []endedOp, effects bool) {
	if len(ops) == 0 || w.halted.Load() {
		return
	}
	slices.SortFunc(ops, func(a, b endedOp) int { return a.op.ID - b.op.ID })
	h := &history.History{Meta: w.meta}
	for i, e := range ops {
		h.Ops = append(h.Ops, e.op)
		for _, a := range e.atts {
			a.Op = i
			h.Attempts = append(h.Attempts, a)
		}
	}
	h.Sort()
	for _, inv := range w.invs {
		o := w.oracles[inv.Oracle]
		if (o != nil) != effects {
			continue
		}
		var obs *history.Reading
		if o != nil {
			if obs = oracles.Observe(ctx, o, h); obs.Err != "" {
				continue // judged at the end, as ever
			}
		}
		v := checks.Check(h, inv, obs)
		if v.Status != checks.Fail || (obs != nil && v.Extra == 0) {
			continue // a missing effect may yet come
		}
		name := inv.Check
		if inv.Oracle != "" {
			name += " on " + inv.Oracle
		}
		w.mu.Lock()
		w.abort(fmt.Sprintf("%s failed on ops that had ended: %s", name, v.Summary))
		w.mu.Unlock()
		return
	}
}
