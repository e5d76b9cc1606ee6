package reports

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/measure"
)

func TestProgressPlan(t *testing.T) {
	for _, c := range []struct {
		p    Progress
		want string
	}{
		{Progress{Total: 100}, "100 ops"},
		{Progress{Dur: 30 * time.Second}, "for 30s"},
		{Progress{Total: 100, Dur: 30 * time.Second}, "100 ops or 30s, whichever comes first"},
	} {
		if got := c.p.Plan(); got != c.want {
			t.Errorf("%+v.Plan() = %q, want %q", c.p, got, c.want)
		}
	}
}

func TestProgressCountersAndStatus(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var tally measure.Tally
	p := Progress{Start: start, Dur: 30 * time.Second}
	if got := p.Counters(start, &tally); got != "0 ops/s" {
		t.Errorf("counters before anything = %q, want 0 ops/s", got)
	}
	for i := range 100 {
		tally.AttemptDone(history.Attempt{Op: i, N: 1, Fault: "drop_ack", Outcome: history.Info})
		tally.AttemptDone(history.Attempt{Op: i, N: 2, Outcome: history.OK, Status: 201, End: 12 * time.Millisecond})
		if i%10 == 0 {
			tally.AttemptDone(history.Attempt{Op: i, N: 3, Outcome: history.OK, Status: 503})
		}
		state := history.Acked
		if i == 0 {
			state = history.Indeterminate
		}
		tally.OpDone(i, state)
	}
	now := start.Add(10*time.Second + 300*time.Millisecond)
	want := "10 ops/s · faults 100 · retries 110 · 4xx 0 · 5xx 10 · p99 12.0ms · indeterminate 1"
	if got := p.Counters(now, &tally); got != want {
		t.Errorf("counters = %q, want %q", got, want)
	}
	if got := p.Status(now, &tally); got != "10s/30s, 100 ops after 10s; "+want {
		t.Errorf("status by duration = %q", got)
	}
	p.Total = 200
	if got := p.Status(now, &tally); got != "100/200 ops after 10s; "+want {
		t.Errorf("status by ops = %q", got)
	}
	p.Total, p.Dur = 0, 0
	if got := p.Status(now, &tally); got != "100 ops after 10s; "+want {
		t.Errorf("status unbounded = %q", got)
	}
}

func TestProgressStage(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := Progress{Start: start, Stages: []history.Stage{{Duration: 10 * time.Second, Rate: 50}, {Duration: 20 * time.Second, Rate: 200, Ramp: true}, {Duration: 5 * time.Second, Concurrency: 4}}}
	for at, want := range map[time.Duration]string{
		-time.Second:     "",
		0:                "stage 1/3 50 ops/s",
		15 * time.Second: "stage 2/3 ramp to 200 ops/s",
		31 * time.Second: "stage 3/3 4 workers",
		40 * time.Second: "",
	} {
		if got := p.Stage(start.Add(at)); got != want {
			t.Errorf("stage at %v = %q, want %q", at, got, want)
		}
	}
	if got := (Progress{Start: start}).Stage(start); got != "" {
		t.Errorf("flat load's stage = %q, want none", got)
	}
}
