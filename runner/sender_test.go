package runner

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// An example of the Sender seam: a target that is not an HTTP API, here
// an in-memory queue whose consumer applies each message it takes. The
// publisher is all a new kind of target needs to write; keys, faults,
// retries, the history, the effects reading and the checks are the
// runner's and checks' own, unchanged.

// queue is a broker with one consumer. A naive consumer applies every
// message it takes; a deduplicating one applies a message id once.
type queue struct {
	mu      sync.Mutex
	dedup   bool
	seen    map[string]bool
	effects map[string]int
}

func (q *queue) deliver(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dedup && q.seen[id] {
		return
	}
	q.seen[id] = true
	q.effects[id]++
}

// publisher publishes an op's message, its id the op's key. A duplicate
// fault publishes it twice (a producer's double send); a drop_ack fault
// loses the broker's confirm after the message was taken, so the attempt
// is indeterminate and the runner retries it, republishing.
type publisher struct{ q *queue }

func (p publisher) Send(ctx context.Context, v scenarios.Vars, f faults.Fault, a *history.Attempt, now func() time.Duration) error {
	if v.Key == "" {
		return fmt.Errorf("a message needs an id")
	}
	a.Start = now()
	defer func() { a.End = now() }()
	copies := 1
	if d, ok := f.(faults.Duplicate); ok {
		copies = max(d.Copies, 2)
		a.Copies = copies
	}
	for range copies {
		p.q.deliver(v.Key)
	}
	if _, ok := f.(faults.DropAck); ok {
		a.Outcome, a.Err = history.Info, "the confirm was lost"
		return nil
	}
	a.Outcome, a.Status = history.OK, 200 // confirmed
	return nil
}

// TestSenderSeam drives a queue through the runner with duplicate sends
// and lost confirms, reads the consumer's effects and judges them with
// the checks as they are: the naive consumer is caught, the
// deduplicating one holds.
func TestSenderSeam(t *testing.T) {
	t.Parallel()
	for _, dedup := range []bool{false, true} {
		q := &queue{dedup: dedup, seen: map[string]bool{}, effects: map[string]int{}}
		sc := scenario(func(sc *scenarios.Scenario) {
			sc.Load = scenarios.Load{Ops: 200, Concurrency: 8}
			sc.Faults = []scenarios.Fault{{Kind: faults.KindDuplicate, Rate: 0.2}, {Kind: faults.KindDropAck, Rate: 0.2}}
		})
		h, err := Run(runCtx(t), sc, Options{Target: &url.URL{Scheme: "amqp", Host: "queue"}, Seed: 7, Sender: publisher{q}})
		if err != nil {
			t.Fatal(err)
		}
		dup, lost := 0, 0
		for _, a := range h.Attempts {
			switch a.Fault {
			case faults.KindDuplicate:
				dup++
			case faults.KindDropAck:
				lost++
			}
		}
		if dup == 0 || lost == 0 || len(h.Ops) != 200 {
			t.Fatalf("dedup %v: %d ops, %d duplicate and %d lost-confirm attempts; want 200 ops and both faults", dedup, len(h.Ops), dup, lost)
		}
		q.mu.Lock()
		reading := history.Reading{Oracle: "consumer", Kind: history.KindEffects, Effects: q.effects}
		q.mu.Unlock()
		v := checks.Check(h, history.Invariant{Check: checks.ExactlyOnce, Oracle: "consumer"}, &reading)
		want := checks.Fail
		if dedup {
			want = checks.Pass
		}
		if v.Status != want {
			t.Errorf("dedup %v: exactly_once = %s (%s), want %s", dedup, v.Status, v.Summary, want)
		}
	}
}
