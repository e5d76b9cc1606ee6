package audit

import (
	"context"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/pause"
)

// C28's crashes: each kills the API and waits for it back. It stops
// after c28Rounds crashes that caught a request in flight, or after
// c28MaxRounds in all.
const (
	c28Rounds    = 2
	c28MaxRounds = 4
)

// probeC28 sends a request, kills the API's process while it is in
// flight (Config.Crash: --kill-cmd, then --start-cmd, then --ready), and
// once the API is back retries the request while it answers in flight,
// within the lease. The crash is recorded as a nemesis window of the
// audit's history, numbered by its round; checks.judgeC28 judges both.
func probeC28(ctx context.Context, a *Auditor) time.Duration {
	// The kill should land at half the calibrated latency, while the
	// request is being processed; the kill command's own time (measured
	// at each crash) is taken off the wait before it.
	var killTook time.Duration
	var keys []string
	informative := 0
	for round := 1; round <= c28MaxRounds && informative < c28Rounds && ctx.Err() == nil; round++ {
		o, err := a.newOp(ctx, "C28")
		if err != nil {
			return 0
		}
		done := make(chan *history.Attempt, 1)
		first := a.build(ctx, req{label: label(round, checks.RoleCrashed, ""), op: o})
		go func() { done <- a.sendBuilt(ctx, first) }()
		if !pause.For(ctx, max(min(a.latency/2, 500*time.Millisecond)-killTook, 0)) {
			<-done
			break
		}
		w := a.cfg.Crash(ctx, round, time.Now().Add(-a.client.Since()))
		a.mu.Lock()
		a.h.Meta.Nemesis = append(a.h.Meta.Nemesis, w)
		a.mu.Unlock()
		if w.Stop != nil {
			killTook = w.Stop.End - w.Stop.Start
		}
		cut := <-done
		if w.Err != "" {
			break // the next crash would fail alike
		}
		if cut.Outcome != history.Info {
			continue // answered before the kill, or never sent: nothing was in flight
		}
		informative++
		tries := a.settle(ctx, req{label: label(round, checks.RoleAfterRestart, ""), op: o}, time.Now(), 20*time.Millisecond, a.settleTries(20*time.Millisecond))
		keys = append(keys, o.key)
		if len(tries) > 0 && busy(tries[len(tries)-1]) {
			break // stuck in flight for the whole lease: another round would wait it out again
		}
	}
	a.effects(ctx, "C28", keys...)
	return 0
}
