package cmd

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

func newFakeProgress(mode progressMode, w *bytes.Buffer) (*progress, *fakeClock) {
	c := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), ticks: make(chan time.Time)}
	p := newProgressMode(Streams{Err: w}, mode, "charges")
	p.now = func() time.Time { return c.t }
	p.ticker = func(time.Duration) (<-chan time.Time, func()) { return c.ticks, func() {} }
	return p, c
}

func feed(p *progress, n int) {
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
	p, clock := newFakeProgress(progressLines, &buf)
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
	p, _ := newFakeProgress(progressBars, &buf)
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
	p, clock := newFakeProgress(progressBars, &buf)
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
	p, _ := newFakeProgress(progressModeOf(Streams{ErrTerminal: true}, true), &buf)
	p.Start(10, 0)
	feed(p, 10)
	p.Phase("reading the oracles")
	p.Close()
	if buf.Len() != 0 {
		t.Errorf("--quiet printed %q", buf.String())
	}
	if m := progressModeOf(Streams{}, false); m != progressLines {
		t.Errorf("progressModeOf(no terminal) = %d, want lines", m)
	}
	if m := progressModeOf(Streams{ErrTerminal: true}, false); m != progressBars {
		t.Errorf("progressModeOf(terminal) = %d, want bars", m)
	}
}
