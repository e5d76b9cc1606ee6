package runner

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/scenarios"
)

// loopback starts an in-process server answering every request with
// handle, else 200 and a tiny JSON body, and returns its URL.
func loopback(t *testing.T, handle http.HandlerFunc) *url.URL {
	t.Helper()
	if handle == nil {
		handle = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"ok":true}`))
		}
	}
	srv := httptest.NewServer(handle)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// achievedRate is the rate at which the ops of h were sent: one over the
// least-squares slope of their first attempts' start times against their
// op numbers. A fit, not a count in a window, so a single scheduling hiccup
// of a loaded machine does not swing it, while a pacer that keeps falling
// behind does.
func achievedRate(t *testing.T, h *history.History) float64 {
	t.Helper()
	var n, sx, sy, sxx, sxy float64
	for _, op := range h.Ops {
		as := h.AttemptsOf(op.ID)
		if len(as) == 0 {
			t.Fatalf("op %d has no attempt", op.ID)
		}
		x, y := float64(op.ID), as[0].Start.Seconds()
		n, sx, sy, sxx, sxy = n+1, sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	slope := (n*sxy - sx*sy) / (n*sxx - sx*sx)
	return 1 / slope
}

// latencies are the latencies (from the intended start) of h's attempts,
// sorted.
func latencies(h *history.History) []time.Duration {
	l := make([]time.Duration, len(h.Attempts))
	for i := range h.Attempts {
		l[i] = h.Attempts[i].Latency()
	}
	slices.Sort(l)
	return l
}

// quantile is the q-quantile (0 < q ≤ 1) of sorted l.
func quantile(l []time.Duration, q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	return l[min(int(q*float64(len(l))), len(l)-1)]
}

// checkRate runs the open model at rate against u for d and checks that it
// issued the ops due and sent them at the rate, within 1%.
func checkRate(t *testing.T, u *url.URL, rate float64, d time.Duration) {
	t.Helper()
	// A neighbour's load can stall a loaded machine for a fifth of a
	// second, which bends the fitted rate by a few percent: a run that
	// falls short is measured again, once (a broken pacer fails both).
	var problems []string
	for try := 1; try <= 2; try++ {
		if problems = rateProblems(t, u, rate, d); len(problems) == 0 {
			return
		}
		t.Logf("try %d fell short: %s", try, strings.Join(problems, "; "))
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// rateProblems runs the open model at rate against u for d and returns
// what fell short: ops not issued, a rate off by more than 1%. The open
// model gets the connection budget the closed model's maximum is measured
// with (64): with 256, the client and the in-process server, sharing two
// cores, carry a third less (a closed model with 256 workers made 41k
// req/s where 64 made 63k), and a moment's lag that starts more workers
// then sinks the open model below the rate it was holding.
func rateProblems(t *testing.T, u *url.URL, rate float64, d time.Duration) []string {
	t.Helper()
	sc := benchScenario(0, 0)
	sc.Load = scenarios.Load{Duration: scenarios.Duration(d), Rate: scenarios.Rate(rate), MaxInFlight: 64}
	h, err := Run(runCtx(t), sc, Options{Target: u, Seed: 1})
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	var problems []string
	due := rate * d.Seconds()
	if n := float64(len(h.Ops)); n < 0.99*due {
		problems = append(problems, fmt.Sprintf("open model at %.0f/s for %v issued %.0f ops, want >= %.0f (99%% of the %.0f due)", rate, d, n, 0.99*due, due))
	}
	for i := range h.Attempts {
		if a := &h.Attempts[i]; !a.Acked() {
			t.Fatalf("attempt %d of op %d: outcome %v status %d err %q, want a 200", a.N, a.Op, a.Outcome, a.Status, a.Err)
		}
	}
	got := achievedRate(t, h)
	if dev := got/rate - 1; dev < -0.01 || dev > 0.01 {
		problems = append(problems, fmt.Sprintf("open model at %.0f/s sent at %.1f/s (%+.2f%%), want within 1%%", rate, got, 100*dev))
	}
	l := latencies(h)
	t.Logf("rate %.0f/s: %d ops, sent at %.1f/s; latency from the intended start p50 %v p99 %v max %v",
		rate, len(h.Ops), got, quantile(l, 0.5), quantile(l, 0.99), quantile(l, 1))
	return problems
}

// TestOpenHoldsRate checks that the open model sends at its rate, within
// 1%, at a fixed rate far below what a loaded 2-core machine sustains
// against an in-process server (tens of thousands of requests per second),
// so that it is fast and does not flake.
//
// It measures the machine as much as the pacer: the long suite runs it
// (and .ci/run again without -race); TestOpenRate checks the schedule on
// a fake clock in the fast suite.
func TestOpenHoldsRate(t *testing.T) {
	testenv.Timing(t)
	testenv.SkipUnlessLong(t)
	checkRate(t, loopback(t, nil), 2000, time.Second)
}

// TestOpenHoldsRateNearMax measures the closed model's maximum against an
// in-process server, then checks that the open model at 80% of it sends at
// its rate, within 1%.
func TestOpenHoldsRateNearMax(t *testing.T) {
	testenv.Timing(t)
	testenv.SkipUnlessLong(t)
	u := loopback(t, nil)
	sc := benchScenario(0, 64)
	d := 2 * time.Second
	sc.Load = scenarios.Load{Duration: scenarios.Duration(d), Concurrency: 64}
	// The machine's speed can change between the two measurements (a
	// neighbour's load): a run that falls short is measured again, once.
	var problems []string
	for try := 1; try <= 2; try++ {
		start := time.Now()
		h, err := Run(runCtx(t), sc, Options{Target: u, Seed: 1})
		if err != nil {
			t.Fatalf("Run() error = %v", err)
		}
		maxRate := float64(len(h.Attempts)) / time.Since(start).Seconds()
		t.Logf("try %d: closed model, 64 workers: %.0f req/s", try, maxRate)
		if problems = rateProblems(t, u, 0.8*maxRate, 3*time.Second); len(problems) == 0 {
			return
		}
		t.Logf("try %d fell short: %s", try, strings.Join(problems, "; "))
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestStallShowsInOpenModelOnly runs each model against a server that
// stalls every request for one second, from 0.5 s to 1.5 s after its first
// request, and otherwise answers in 5ms. The open model measures from the
// intended start, so every op due in the stall waits for its end and the
// stall fills its upper percentiles (coordinated omission corrected); the
// closed model's few workers just wait, sending nothing, so only a handful
// of its attempts see the stall and its p99 stays low.
//
// It runs on synctest's fake clock, the server a handler in the bubble
// (testenv.HandlerTransport): the latencies are the stall's exactly, and
// a loaded machine cannot blur them.
func TestStallShowsInOpenModelOnly(t *testing.T) {
	t.Parallel()
	const (
		from  = 500 * time.Millisecond
		until = 1500 * time.Millisecond
		d     = 2 * time.Second
		each  = 5 * time.Millisecond
	)
	stalling := func() http.HandlerFunc {
		var once sync.Once
		var t0 time.Time
		return func(w http.ResponseWriter, r *http.Request) {
			once.Do(func() { t0 = time.Now() })
			if el := time.Since(t0); el >= from && el < until {
				time.Sleep(until - el)
			} else {
				time.Sleep(each)
			}
			w.Write([]byte(`{"ok":true}`))
		}
	}
	target, _ := url.Parse("http://stalling.test")
	cases := []struct {
		name string
		load scenarios.Load
		// check reports what is wrong with the sorted latencies l.
		check func(l []time.Duration) string
	}{
		{
			name: "open",
			load: scenarios.Load{Duration: scenarios.Duration(d), Rate: 200, MaxInFlight: 512},
			check: func(l []time.Duration) string {
				// Half the ops are due in the stall, the first tenth of
				// them waiting 0.9 s or more.
				if p90 := quantile(l, 0.9); p90 < 500*time.Millisecond {
					return "p90 below 500ms: the stall is hidden"
				}
				return ""
			},
		},
		{
			name: "closed",
			load: scenarios.Load{Duration: scenarios.Duration(d), Concurrency: 4},
			check: func(l []time.Duration) string {
				if p99 := quantile(l, 0.99); p99 > 250*time.Millisecond {
					return "p99 above 250ms: the closed model's few stalled attempts fill its percentiles"
				}
				return ""
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				sc := benchScenario(0, 0)
				sc.Load = c.load
				ctx, cancel := context.WithTimeout(context.Background(), bound)
				defer cancel()
				h, err := Run(ctx, sc, Options{Target: target, Transport: testenv.HandlerTransport(stalling()), Seed: 1})
				if err != nil {
					t.Fatalf("Run() error = %v", err)
				}
				l := latencies(h)
				p50, p90, p99, top := quantile(l, 0.5), quantile(l, 0.9), quantile(l, 0.99), quantile(l, 1)
				t.Logf("%s: %d attempts, p50 %v p90 %v p99 %v max %v", c.name, len(l), p50, p90, p99, top)
				// The first attempt in the stall waits out most of its second.
				if top < 750*time.Millisecond {
					t.Errorf("%s model: max latency %v, want >= 750ms (some attempt waited out the stall)", c.name, top)
				}
				if msg := c.check(l); msg != "" {
					t.Errorf("%s model: p50 %v p90 %v p99 %v max %v over %d attempts: %s", c.name, p50, p90, p99, top, len(l), msg)
				}
			})
		})
	}
}

// The open model starts workers while ops are due that none took, so a
// slow target sees the ops in flight grow, up to max_in_flight and never
// past it.
func TestOpenGrowsToMaxInFlight(t *testing.T) {
	t.Parallel()
	// On a fake clock (bubbleServer): ops are due every 1 ms and each
	// takes 30 ms exactly, whatever the machine's load.
	synctest.Test(t, func(t *testing.T) {
		var cur, peak atomic.Int64
		s, opts := bubbleServer(func(w http.ResponseWriter, r *http.Request, _ int64, _ []byte) {
			n := cur.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(30 * time.Millisecond)
			cur.Add(-1)
			w.WriteHeader(http.StatusCreated)
		})
		opts.Seed = 1
		sc := scenario(func(sc *scenarios.Scenario) {
			sc.Load = scenarios.Load{Ops: 60, Rate: 1000, MaxInFlight: 6}
		})
		h, err := Run(runCtx(t), sc, opts)
		if err != nil {
			t.Fatalf("Run() error = %v", err)
		}
		if len(h.Ops) != 60 || len(s.requests()) != 60 {
			t.Fatalf("%d ops, %d requests, want 60", len(h.Ops), len(s.requests()))
		}
		if p := peak.Load(); p != 6 {
			t.Errorf("at most %d requests in flight, want exactly max_in_flight 6 (ops due every 1 ms, each taking 30 ms)", p)
		}
	})
}
