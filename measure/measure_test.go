package measure

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/history"
)

func msd(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestLatency(t *testing.T) {
	h := &history.History{
		Meta: history.Meta{BitRecorded: true},
		Ops:  []history.Op{{ID: 0}, {ID: 1}, {ID: 2}, {ID: 3}},
		Attempts: []history.Attempt{
			// queued 1ms before it was sent: latency counts from the intended start
			{Op: 0, N: 1, Outcome: history.OK, Status: 201, Intended: 0, Start: msd(1), End: msd(10)},
			{Op: 1, N: 1, Outcome: history.Info, Fault: "drop_ack", Intended: 0, End: msd(5), Bit: true},
			{Op: 1, N: 2, Outcome: history.OK, Status: 201, Intended: msd(20), Start: msd(20), End: msd(50)},
			{Op: 2, N: 1, Outcome: history.OK, Status: 201, Fault: "delay", Intended: 0, End: 2 * time.Hour},
			// a replay 1.5s later is no part of the op's latency, nor a retry
			{Op: 3, N: 1, Outcome: history.OK, Status: 201, Intended: 0, Start: 0, End: msd(20)},
			{Op: 3, N: 2, Outcome: history.OK, Status: 201, Fault: history.FaultReplay, Intended: msd(1520), Start: msd(1520), End: msd(1530)},
		},
	}
	h.Sort()
	s := Of(h)
	near := func(got time.Duration, wantMS float64) bool { return MS(got) > wantMS*0.99 && MS(got) < wantMS*1.01 }
	if a := s.Latency.Attempt; a.Count != 3 || !near(a.Max, 30) || !near(a.P50, 20) {
		t.Errorf("attempt latency = %+v, want 3 clean attempts (10, 20, 30ms; the replay and faulted ones left out)", a)
	}
	if o := s.Latency.Op; o.Count != 4 || !near(o.P50, 20) || !near(o.Max, 3600000) {
		t.Errorf("op latency = %+v, want 10, 20, 50ms and the 1h clamp", o)
	}
	if s.Load.Retries != 1 || s.Load.Replays != 1 {
		t.Errorf("retries %d replays %d, want 1 and 1", s.Load.Retries, s.Load.Replays)
	}
	if want := []FaultCount{{Name: "delay", Count: 1, Planned: 1}, {Name: "drop_ack", Count: 1, Planned: 1, Bit: 1}}; !cmp.Equal(s.Faults, want) {
		t.Errorf("faults = %v, want %v: delay and drop_ack only (replays are no fault), the drop_ack bit", s.Faults, want)
	}
	h.Meta.BitRecorded = false
	if f := Of(h).Faults; len(f) != 2 || !f[0].BitUnknown || !f[1].BitUnknown || f[1].Bit != 0 {
		t.Errorf("faults of a history that did not record bites = %v, want both BitUnknown with Bit 0", f)
	}
}
