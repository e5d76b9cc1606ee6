package live

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
)

// fakeClock drives a progress without sleeping: ticks are sent by the
// test, time moves when it says.
type fakeClock struct {
	t     time.Time
	ticks chan time.Time
}

func newFakeProgress(mode Mode, w *bytes.Buffer) (*Progress, *fakeClock) {
	c := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), ticks: make(chan time.Time)}
	p := New(w, mode, "charges")
	p.now = func() time.Time { return c.t }
	p.ticker = func(time.Duration) (<-chan time.Time, func()) { return c.ticks, func() {} }
	return p, c
}

func feed(p *Progress, n int) {
	for i := range n {
		p.AttemptDone(history.Attempt{Op: i, N: 1, Fault: "drop_ack", Outcome: history.Info})
		p.AttemptDone(history.Attempt{Op: i, N: 2, Outcome: history.OK, Status: 201, End: 12 * time.Millisecond})
		if i%10 == 0 {
			p.AttemptDone(history.Attempt{Op: i, N: 3, Outcome: history.OK, Status: 503})
		}
		p.OpDone(i, history.Acked)
	}
}

func TestProgressLinesEveryTick(t *testing.T) {
	var buf bytes.Buffer
	p, clock := newFakeProgress(Lines, &buf)
	p.Start(0, 30*time.Second)
	feed(p, 100)
	clock.t = clock.t.Add(10 * time.Second)
	clock.ticks <- clock.t
	clock.t = clock.t.Add(20 * time.Second)
	// The load is over: the steps after it come after "load done", whose
	// rate is the load's, not the quiet period's.
	p.Phase("quiet period 2s, then reading the oracles")
	clock.t = clock.t.Add(20 * time.Second)
	p.Close()
	got := buf.String()
	want := "charges: started, for 30s\n" +
		"charges: 10s/30s, 100 ops after 10s; 10 ops/s · faults 100 · retries 110 · 4xx 0 · 5xx 10 · p99 12.0ms\n" +
		"charges: load done, 30s/30s, 100 ops after 30s; 3 ops/s · faults 100 · retries 110 · 4xx 0 · 5xx 10 · p99 12.0ms\n" +
		"charges: quiet period 2s, then reading the oracles\n"
	if got != want {
		t.Errorf("progress lines:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(got, "\x1b") || strings.Contains(got, "\r") {
		t.Errorf("plain lines hold terminal control characters: %q", got)
	}
}

func TestProgressBarsCountOpsAndSeconds(t *testing.T) {
	var buf bytes.Buffer
	p, _ := newFakeProgress(Bars, &buf)
	p.Start(50, 0)
	feed(p, 50)
	p.Close()
	if !strings.Contains(buf.String(), "50/50 ops") {
		t.Errorf("ops bar: %q; want 50/50 ops", buf.String())
	}
	if got := p.counters(p.start.Add(5 * time.Second)); got != "10 ops/s · faults 50 · retries 55 · 4xx 0 · 5xx 5 · p99 12.0ms" {
		t.Errorf("live counters = %q", got)
	}

	buf.Reset()
	p, clock := newFakeProgress(Bars, &buf)
	p.Start(0, 3*time.Second)
	clock.t = clock.t.Add(2 * time.Second)
	clock.ticks <- clock.t
	p.Close()
	if !strings.Contains(buf.String(), "2s/3s") {
		t.Errorf("duration bar: %q; want it to count seconds (2s/3s)", buf.String())
	}
}

func TestProgressQuiet(t *testing.T) {
	var buf bytes.Buffer
	p, _ := newFakeProgress(ModeOf(true, true), &buf)
	p.Start(10, 0)
	feed(p, 10)
	p.Phase("reading the oracles")
	p.Close()
	if buf.Len() != 0 {
		t.Errorf("--quiet printed %q", buf.String())
	}
	if m := ModeOf(false, false); m != Lines {
		t.Errorf("ModeOf(no terminal) = %d, want lines", m)
	}
	if m := ModeOf(true, false); m != Bars {
		t.Errorf("ModeOf(terminal) = %d, want bars", m)
	}
}

// The progress names the stage under way and its target, and nothing
// once the stages are over.
func TestProgressNamesTheStage(t *testing.T) {
	var buf bytes.Buffer
	p, _ := newFakeProgress(Lines, &buf)
	p.Stages([]history.Stage{{Duration: 10 * time.Second, Rate: 50}, {Duration: 20 * time.Second, Rate: 200, Ramp: true}, {Duration: 5 * time.Second, Concurrency: 4}})
	p.Start(0, 35*time.Second)
	for at, want := range map[time.Duration]string{
		0:                "stage 1/3 50 ops/s",
		15 * time.Second: "stage 2/3 ramp to 200 ops/s",
		31 * time.Second: "stage 3/3 4 workers",
		40 * time.Second: "",
	} {
		got := p.stage(p.start.Add(at))
		if got != want {
			t.Errorf("stage at %v = %q, want %q", at, got, want)
		}
		if c := p.counters(p.start.Add(at)); want != "" && !strings.HasPrefix(c, want+" · ") {
			t.Errorf("counters at %v = %q, want them to start with the stage", at, c)
		}
	}
	p.Close()
}
