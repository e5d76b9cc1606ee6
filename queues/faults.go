package queues

import (
	"context"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/pause"
)

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
// more were; a drop_ack always (the broker took it, and the producer
// never hears so: outcome info, and the runner publishes again, as a
// producer whose confirm timed out does).
func afterPublish(f faults.Fault, a *history.Attempt, stored int) {
	switch f.(type) {
	case faults.Duplicate:
		a.Bit = stored >= 2
	case faults.DropAck:
		a.Bit = true
		a.Outcome, a.Status, a.Err = history.Info, 0, "the broker's confirm was lost (drop_ack)"
	}
}
