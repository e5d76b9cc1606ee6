package cmd

import (
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/idemcheck/idemcheck/history"
)

// progress adapts the runner's Observer to an mpb bar on stderr. It is a
// no-op when stderr is not a terminal, so CI logs and redirected output
// never hold a progress byte.
type progress struct {
	enabled bool
	streams Streams
	name    string

	once  sync.Once
	p     *mpb.Progress
	bar   *mpb.Bar
	total int64
	start time.Time
	dur   time.Duration
	stop  chan struct{}
	wg    sync.WaitGroup
}

func newProgress(s Streams, enabled bool, name string) *progress {
	return &progress{enabled: enabled, streams: s, name: name}
}

// Start implements runner.Observer.
func (p *progress) Start(totalOps int, d time.Duration) {
	if !p.enabled {
		return
	}
	p.once.Do(func() {
		p.start = time.Now()
		p.p = mpb.New(mpb.WithOutput(p.streams.Err), mpb.WithWidth(40), mpb.WithRefreshRate(150*time.Millisecond))
		total := int64(totalOps)
		if total == 0 {
			// duration-bound load: the bar tracks time, in milliseconds
			total, p.dur = d.Milliseconds(), d
		}
		p.total = total
		p.bar = p.p.AddBar(total,
			mpb.PrependDecorators(decor.Name(p.name+" ", decor.WCSyncSpaceR), decor.CountersNoUnit("%d/%d")),
			mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), decor.Name(" "), decor.AverageETA(decor.ET_STYLE_GO)),
		)
		if p.dur > 0 {
			p.stop = make(chan struct{})
			p.wg.Add(1)
			go p.tick()
		}
	})
}

func (p *progress) tick() {
	defer p.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			el := time.Since(p.start).Milliseconds()
			if el > p.total {
				el = p.total
			}
			p.bar.SetCurrent(el)
		}
	}
}

// OpDone implements runner.Observer.
func (p *progress) OpDone(op int, state history.OpState) {
	if !p.enabled || p.bar == nil || p.dur > 0 {
		return
	}
	p.bar.Increment()
}

// Close finishes the bar and waits for it to render.
func (p *progress) Close() {
	if p.p == nil {
		return
	}
	if p.stop != nil {
		close(p.stop)
		p.wg.Wait()
	}
	p.bar.SetTotal(-1, true)
	p.p.Wait()
}
