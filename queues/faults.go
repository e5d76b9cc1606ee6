package queues

import (
	"context"
	"time"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/pause"
	"github.com/idemcheck/idemcheck/scenarios"
)

// publishing begins a publish, whatever the broker: it renders the body
// and connects (connect), stamps the attempt's start and does what f does
// before a publish (beforePublish). It returns the body, the connection
// and how many copies to publish; 0 copies means the attempt is settled
// (not connected, or a delay cut short) and its end stamped. An error is
// the body's: nothing was attempted. The caller stamps the end of an
// attempt it publishes.
func publishing[C any](ctx context.Context, body *scenarios.Text, v scenarios.Vars, f faults.Fault, a *history.Attempt,
	now func() time.Duration, connect func() (C, error)) (string, C, int, error) {
	var c C
	text, err := body.Render(ctx, v)
	if err != nil {
		return "", c, 0, err
	}
	c, err = connect()
	a.Start = now()
	copies := 0
	if err != nil {
		a.Outcome, a.Err = history.Fail, "not published: "+err.Error()
	} else {
		copies = beforePublish(ctx, f, a)
	}
	if copies == 0 {
		a.End = now()
	}
	return text, c, copies, nil
}

// beforePublish does what fault f does before a publish, whatever the
// broker: a delay waits (and bit when the whole wait elapsed), a
// duplicate sets how many copies go at once. It returns how many copies
// to publish, or 0 when the wait was cut short (a then says it was not
// published).
func beforePublish(ctx context.Context, f faults.Fault, a *history.Attempt) int {
	if d, ok := f.(faults.Delay); ok {
		if !pause.For(ctx, d.Wait) {
			a.Outcome, a.Err = history.Fail, "not published: "+ctx.Err().Error()
			return 0
		}
		a.Bit = true
	}
	if d, ok := f.(faults.Duplicate); ok {
		a.Copies = max(d.Copies, 2)
		return a.Copies
	}
	return 1
}

// afterPublish records what fault f made of a publish the broker
// confirmed, stored of its copies taken: a duplicate bit when two or
// more were; a drop_ack when one was (the broker took it, and the
// producer never hears so: outcome info, and the runner publishes again,
// as a producer whose confirm timed out does; a copy the broker dropped
// as a duplicate leaves nothing to lose a confirm of).
func afterPublish(f faults.Fault, a *history.Attempt, stored int) {
	switch f.(type) {
	case faults.Duplicate:
		a.Bit = stored >= 2
	case faults.DropAck:
		a.Bit = stored > 0 // a confirm lost on a message the broker kept (not one it dropped as a duplicate)
		a.Outcome, a.Status, a.Err = history.Info, 0, "the broker's confirm was lost (drop_ack)"
	}
}
