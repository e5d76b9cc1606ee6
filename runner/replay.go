package runner

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// replayer re-sends acknowledged ops (operation.replay), and after the
// replays of another payload the op's own request once more
// (replay.then_original). Each acknowledged
// op gets a goroutine that waits, sends and records its replays with a
// worker of its own, taken from a free list: the op's worker goes on with
// its next op at once, so a long replay wait neither slows the closed
// model nor fills the open model's max_in_flight, and the load is the same
// with and without replays. Run waits for every replay before it returns.
type replayer struct {
	count int
	after time.Duration
	fault string
	body  *scenarios.Text // nil: the op's own body
	// original sends the op's own request after the replays of body.
	original bool

	wg   sync.WaitGroup
	mu   sync.Mutex
	free []*worker // idle replay workers
	all  []*worker // every replay worker, for the merge
}

func newReplayer(rp *scenarios.Replay, env func(string) string) (*replayer, error) {
	p := &replayer{count: max(rp.Count, 1), after: time.Duration(rp.After), fault: history.FaultReplay}
	if rp.Body != "" {
		b, err := scenarios.NewText("operation.replay.body", rp.Body, env)
		if err != nil {
			return nil, err
		}
		p.body, p.fault = b, history.FaultMismatch
		p.original = rp.ThenOriginal != nil && *rp.ThenOriginal
	}
	return p, nil
}

// start replays op, acknowledged by an answer that ended at end, in a
// goroutine of its own, and tells the observer when it is done.
func (p *replayer) start(r *run, op int, v scenarios.Vars, end time.Duration) {
	p.mu.Lock()
	var w *worker
	if n := len(p.free); n > 0 {
		w = p.free[n-1]
		p.free = p.free[:n-1]
	} else {
		w = r.newWorker()
		p.all = append(p.all, w)
	}
	p.mu.Unlock()
	p.wg.Go(func() {
		w.replays(op, v, end)
		if r.obs != nil {
			r.obs.OpDone(op, history.Acked)
		}
		p.mu.Lock()
		p.free = append(p.free, w)
		p.mu.Unlock()
	})
}

// replays sends the replays of op, whose last attempt was v.Attempt and
// ended at prev: each waits the replay's after from the previous answer
// (or error), carries no injected fault and is not retried. Its attempts
// continue the op's numbering. After the replays of another payload, the
// op's own request goes once more (history.FaultReplay), so that a
// rejection which replaced the stored answer shows in same_response.
func (w *worker) replays(op int, v scenarios.Vars, prev time.Duration) {
	r := w.r
	p := r.replay
	v.Rand = w.rnd
	n := p.count
	if p.original {
		n++
	}
	for i := range n {
		fault, mismatch := p.fault, p.body != nil
		if i == p.count {
			fault, mismatch = history.FaultReplay, false // the original, after the mismatch
		}
		intended := prev + p.after
		if !w.sleep(intended - r.since()) {
			return
		}
		v.Attempt++
		// The same Rand state as the op's attempts: the same body.
		w.pcg.Seed(r.tmplSeed, uint64(op))
		a := history.Attempt{Op: op, N: v.Attempt, Fault: fault, Intended: intended, Target: r.target(op, v.Attempt)}
		if r.sender != nil {
			// Another kind of target replays its own message, as sent.
			a, _ = w.sendOther(v, nil, a)
			w.rec.attempts.add(a)
			r.recorded(a)
			prev = a.End
			continue
		}
		req, err := w.buildReplay(w.sendCtx, v, a.Target, mismatch)
		if err != nil {
			w.rec.attempts.add(w.unrendered(op, v.Attempt, fault, intended, err))
			return
		}
		r.send(&w.session, &a, req)
		w.rec.attempts.add(a)
		r.recorded(a)
		prev = a.End
	}
}

// buildReplay renders a replay to target: the op's own request, or (for
// a mismatch) the replay body, with the key in its body field when the
// key goes there.
func (w *worker) buildReplay(ctx context.Context, v scenarios.Vars, target int, mismatch bool) (*http.Request, error) {
	r := w.r
	if !mismatch {
		return w.build(ctx, v, target)
	}
	s, err := r.replay.body.Render(ctx, v)
	if err != nil {
		return nil, err
	}
	return r.keyedRequest(ctx, v, []byte(s), target)
}
