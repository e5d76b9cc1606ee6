package measure

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

func TestTally(t *testing.T) {
	var y Tally
	if _, ok := y.P99(); ok {
		t.Errorf("P99 of an empty tally: ok, want none")
	}
	for i := range 10 {
		y.AttemptDone(history.Attempt{Op: i, N: 1, Fault: "drop_ack", Outcome: history.Info})
		y.AttemptDone(history.Attempt{Op: i, N: 2, Outcome: history.OK, Status: 201, End: 12 * time.Millisecond})
		if i%5 == 0 {
			y.AttemptDone(history.Attempt{Op: i, N: 3, Outcome: history.OK, Status: 503})
			y.AttemptDone(history.Attempt{Op: i, N: 4, Outcome: history.OK, Status: 409, Fault: history.FaultReplay})
		}
		y.OpDone(i, history.Acked)
	}
	y.OpDone(10, history.Indeterminate)
	y.OpDone(11, history.Rejected)
	y.OpDone(12, history.NotSent)
	want := Counts{Ops: 13, Acked: 10, Rejected: 1, NotSent: 1, Indeterminate: 1, Attempts: 24, Faults: 10, Retries: 12, S4xx: 2, S5xx: 2}
	if got := y.Counts(); got != want {
		t.Errorf("Counts() = %+v, want %+v", got, want)
	}
	// a replay is no fault and no retry, but its answer counts (the 409s)
	y.AttemptDone(history.Attempt{Op: 13, N: 1, Outcome: history.OK, Status: 404})
	if got := y.Counts().S4xx; got != 3 {
		t.Errorf("Counts().S4xx = %d, want 3", got)
	}
	if got, ok := y.P99(); !ok || got < 11*time.Millisecond || got > 13*time.Millisecond {
		t.Errorf("P99() = %v, %v; want about 12ms", got, ok)
	}
}
