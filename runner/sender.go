package runner

import (
	"context"
	"errors"
	"time"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// Sender sends the attempts of a target that is not a request/response
// HTTP API: a message queue, a webhook receiver. It is the seam a new kind
// of target plugs into: one package implements Sender (and its part of
// the scenario schema), and the runner's keys, fault placement, retries,
// pacing and history, and the oracles, checks and reports after them,
// are used unchanged (see the example in sender_test.go).
//
// Send is called from many workers at once: an implementation must be
// safe for concurrent use.
type Sender interface {
	// Send makes one attempt: it renders what it sends from v (v.Key is
	// the op's key, the same on every attempt; v.Attempt the attempt's
	// number), injects f (nil for none) as this kind of target allows (a
	// duplicate publish, a confirm that is dropped), and records in a
	// what came of it: Start and End on the run's clock (now), Outcome
	// (ok: the target acknowledged it; info: it may have been taken; fail:
	// it certainly was not), Status where the kind has one, Fingerprint
	// and Err. a comes with Op, N, Target and Intended set, and Fault when
	// f is not nil. Send returns an error only when nothing could be
	// rendered, and then sends nothing (the runner records the attempt as
	// failed and does not retry it).
	Send(ctx context.Context, v scenarios.Vars, f faults.Fault, a *history.Attempt, now func() time.Duration) error
}

// errTarget wraps the error of an attempt a Sender failed to send for a
// reason no fault injected, so that the run says what the target did.
var errSender = errors.New("the target did not take the attempt")

// sendOther makes attempt a of the op whose vars are v through the run's
// Sender, fault f injected.
func (w *worker) sendOther(v scenarios.Vars, f faults.Fault, a history.Attempt) (history.Attempt, bool) {
	r := w.r
	if f != nil && a.Fault == "" {
		a.Fault = f.Kind()
	}
	ctx, cancel := withTimeout(w.ctx, r.timeout, r.timeoutErr)
	defer cancel()
	w.sent++
	if err := r.sender.Send(ctx, v, f, &a, r.since); err != nil {
		return w.unrendered(a.Op, a.N, a.Fault, a.Intended, err), false
	}
	a.Err = r.keep.scrub(a.Err)
	switch {
	case a.Outcome == history.OK:
		w.answered++
	case a.Fault == "":
		w.failed++
		if w.transportErr == nil {
			w.transportErr = &scrubbed{a.Err, errSender}
		}
	}
	return a, true
}
