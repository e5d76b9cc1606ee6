// Package live shows a run's progress while it runs: bars with live
// counters on a terminal, a plain line every 10 s in a log, nothing when
// quiet. It renders what the runner's Observer hears; it writes only to
// the writer it is given (stderr), never to a report's.
package live

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/termsafe"
	"github.com/idemcheck/idemcheck/measure"
	"github.com/idemcheck/idemcheck/reports"
)

// Mode is how a run shows its progress.
type Mode int

const (
	// Off shows nothing (--quiet).
	Off Mode = iota
	// Lines prints one plain line every Every, for CI logs and
	// redirected stderr, where bars would be noise.
	Lines
	// Bars draws mpb bars with live counters, on a terminal.
	Bars
)

// Every is how often Lines prints.
const Every = 10 * time.Second

// ModeOf chooses the mode: nothing when quiet, bars when the writer is a
// terminal, else a line every 10 s.
func ModeOf(terminal, quiet bool) Mode {
	switch {
	case quiet:
		return Off
	case terminal:
		return Bars
	}
	return Lines
}

// Progress adapts the runner's Observer to stderr: bars on a terminal,
// a plain line every 10 s elsewhere, nothing with --quiet. It never
// writes to stdout, so a report there never holds a progress byte.
//
// Its measure.Tally counts ops by how they ended (OpDone) and, when the
// runner reports attempts (AttemptDone), faults, retries, 4xx and 5xx
// answers and the clean attempts' p99 so far; Phase announces the steps
// after the load (the quiet period, the oracle reads).
type Progress struct {
	mode Mode
	w    io.Writer
	name string
	// ticker makes the clock for lines and the bar's seconds; tests
	// replace it with a channel they drive.
	ticker func(time.Duration) (<-chan time.Time, func())
	now    func() time.Time

	once  sync.Once
	start time.Time
	total int64         // ops, 0 when bound by duration
	dur   time.Duration // load.duration, 0 when bound by ops
	p     *mpb.Progress
	bar   *mpb.Bar
	// barTotal is the bar's total: ops, or whole seconds
	barTotal int64
	stop     chan struct{}
	wg       sync.WaitGroup
	outMu    sync.Mutex // lines and phases from two goroutines

	tally measure.Tally
	// stages are a load in stages' (Stages), named as they go
	stages []history.Stage
}

// New shows a scenario's progress on w in mode. The name comes from the
// scenario: its control characters are shown escaped.
func New(w io.Writer, mode Mode, name string) *Progress {
	return &Progress{mode: mode, w: w, name: termsafe.String(name), now: time.Now,
		ticker: func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}}
}

// Start implements runner.Observer.
func (p *Progress) Start(totalOps int, d time.Duration) {
	if p.mode == Off {
		return
	}
	p.once.Do(func() {
		p.start = p.now()
		p.total, p.dur = int64(totalOps), d
		p.stop = make(chan struct{})
		switch p.mode {
		case Bars:
			p.startBar()
		case Lines:
			p.printf("%s: started, %s\n", p.name, p.view().Plan())
			p.wg.Add(1)
			go p.loop(Every, func(now time.Time) { p.printf("%s: %s\n", p.name, p.status(now)) })
		}
	})
}

func (p *Progress) startBar() {
	// bars only on a terminal (ModeOf), so refresh whatever the
	// writer looks like
	p.p = mpb.New(mpb.WithOutput(p.w), mpb.WithAutoRefresh(), mpb.WithWidth(32), mpb.WithRefreshRate(150*time.Millisecond))
	count := decor.CountersNoUnit("%d/%d ops")
	total := p.total
	if total == 0 {
		// bound by duration: the bar counts whole seconds
		total = max(int64((p.dur+time.Second-1)/time.Second), 1)
		count = decor.CountersNoUnit("%ds/%ds")
	}
	p.barTotal = total
	p.bar = p.p.AddBar(total,
		mpb.PrependDecorators(decor.Name(p.name+" ", decor.WCSyncSpaceR), count),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return p.live() }, decor.WCSyncSpace)),
	)
	if p.total == 0 {
		p.wg.Add(1)
		go p.loop(200*time.Millisecond, func(now time.Time) {
			p.bar.SetCurrent(min(int64(now.Sub(p.start)/time.Second), total))
		})
	}
}

// loop calls f with the time every d until Close.
func (p *Progress) loop(d time.Duration, f func(now time.Time)) {
	defer p.wg.Done()
	c, stop := p.ticker(d)
	defer stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-c:
			f(now)
		}
	}
}

// OpDone implements runner.Observer.
func (p *Progress) OpDone(op int, state history.OpState) {
	if p.mode == Off {
		return
	}
	p.tally.OpDone(op, state)
	if p.bar != nil && p.total > 0 {
		p.bar.Increment()
	}
}

// AttemptDone hears each attempt when it ends (the runner calls it when
// its Observer has the method): faults, retries, answers by class and the
// clean attempts' latency.
func (p *Progress) AttemptDone(a history.Attempt) {
	if p.mode == Off {
		return
	}
	p.tally.AttemptDone(a)
}

// Phase announces a step after the load, such as "quiet period 2s" or
// "reading the oracles" (trial calls it when its Observer has the method).
func (p *Progress) Phase(what string) {
	if p.mode == Off {
		return
	}
	if p.mode == Bars && p.p != nil {
		// a line above the bar, which keeps drawing
		p.outMu.Lock()
		defer p.outMu.Unlock()
		fmt.Fprintf(p.p, "%s: %s\n", p.name, what)
		return
	}
	p.endLines()
	p.printf("%s: %s\n", p.name, what)
}

// endLines ends the load's part of a log of lines, once: the periodic
// status stops and "load done" is printed with the load's own rate, before
// the steps that follow it.
func (p *Progress) endLines() {
	if p.mode != Lines || p.stop == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	p.stop = nil
	p.printf("%s: load done, %s\n", p.name, p.status(p.now()))
}

func (p *Progress) printf(format string, args ...any) {
	p.outMu.Lock()
	defer p.outMu.Unlock()
	fmt.Fprintf(p.w, format, args...)
}

// live is the counters after the bar: rate, faults, retries, answers, p99.
func (p *Progress) live() string { return p.counters(time.Now()) }

// view renders the counts: reports.Progress over what Start and Stages
// announced.
func (p *Progress) view() reports.Progress {
	return reports.Progress{Start: p.start, Total: p.total, Dur: p.dur, Stages: p.stages}
}

func (p *Progress) counters(now time.Time) string { return p.view().Counters(now, &p.tally) }

// status is one line of progress for logs, at now.
func (p *Progress) status(now time.Time) string { return p.view().Status(now, &p.tally) }

// Close ends the progress: the bar completes, the log gets a last line.
func (p *Progress) Close() {
	if p.mode == Lines {
		p.endLines() // unless a step after the load already did
		return
	}
	if p.stop == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	if p.mode == Bars {
		if p.total == 0 {
			p.bar.SetCurrent(min(int64(p.now().Sub(p.start)/time.Second), p.barTotal))
		}
		if !p.bar.Completed() {
			p.bar.Abort(false) // an interrupted run: the bar stays where it stopped
		}
		p.p.Wait()
	}
	p.stop = nil
}

// Stages implements runner.StageObserver: the load's stages, before
// Start.
func (p *Progress) Stages(stages []history.Stage) { p.stages = stages }

// stage names the stage under way at now (reports.Progress.Stage).
func (p *Progress) stage(now time.Time) string { return p.view().Stage(now) }
