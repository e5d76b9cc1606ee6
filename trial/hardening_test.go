package trial

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/testenv"
)

// slowCounts serves the charges API whose counts answer at once before
// the load (the oracle's reading before) and after delay once a charge
// was made. It is a handler the trial reaches through
// testenv.HandlerTransport, with no socket: the tests that wait on the
// quiet period and the oracles' budget run in a testing/synctest bubble,
// where those waits take no time and are exact whatever the machine's
// load.
func slowCounts(delay time.Duration) Options {
	c := &charges{idempotent: true, n: map[string]int{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		charged := len(c.n) > 0
		c.mu.Unlock()
		if r.URL.Path == "/counts" && charged {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		c.ServeHTTP(w, r)
	})
	return Options{Target: "http://charges.test", Transport: testenv.HandlerTransport(h), Seed: 1}
}

// The oracles' budget starts after the quiet period: a quiet as long as
// the budget no longer leaves the reading inconclusive.
func TestObserveBudgetAfterQuiet(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		sc := load(t, strings.Replace(scenario, "quiet: 1ms", "quiet: 300ms", 1))
		opts := slowCounts(50 * time.Millisecond)
		opts.ObserveTimeout = 250 * time.Millisecond
		tr, err := Prepare(context.Background(), sc, opts)
		if err != nil {
			t.Fatal(err)
		}
		h, err := tr.Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		tr.Observe(context.Background(), h)
		if len(h.Readings) != 1 || h.Readings[0].Err != "" {
			t.Errorf("readings after a quiet longer than the budget: %+v, want one without error", h.Readings)
		}
	})
}

// An interruption during the quiet period cuts it short, and the oracles
// still read; the abort context (a second Ctrl-C) stops the reading.
func TestObserveInterrupted(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		sc := load(t, strings.Replace(scenario, "quiet: 1ms", "quiet: 1h", 1))
		abort, stop := context.WithCancel(context.Background())
		defer stop()
		ctx, interrupt := context.WithCancel(WithAbort(context.Background(), abort))
		defer interrupt()
		tr, err := Prepare(ctx, sc, slowCounts(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		h, err := tr.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		start := time.Now()
		go func() {
			defer close(done)
			tr.Observe(ctx, h)
		}()
		time.Sleep(50 * time.Millisecond)
		interrupt() // first Ctrl-C: the hour of quiet is cut to InterruptedQuiet
		time.Sleep(InterruptedQuiet + 200*time.Millisecond)
		select {
		case <-done:
			t.Fatal("Observe returned before the oracle answered or was aborted")
		default:
		}
		stop() // second Ctrl-C: the reading in flight ends
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Observe did not return after abort")
		}
		if took := time.Since(start); took != InterruptedQuiet+250*time.Millisecond {
			t.Errorf("Observe took %v, want %v: the quiet cut to %v, then the reading until the abort", took, InterruptedQuiet+250*time.Millisecond, InterruptedQuiet)
		}
		if len(h.Readings) != 1 || !strings.Contains(h.Readings[0].Err, "canceled") {
			t.Errorf("readings = %+v, want one that failed with the abort", h.Readings)
		}
	})
}

// A run interrupted before the quiet period starts waits at most
// InterruptedQuiet, then reads.
func TestObserveAfterInterruptedLoad(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		sc := load(t, strings.Replace(scenario, "quiet: 1ms", "quiet: 1h", 1))
		tr, err := Prepare(context.Background(), sc, slowCounts(0))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		start := time.Now()
		h := &history.History{}
		tr.Observe(ctx, h)
		if took := time.Since(start); took != InterruptedQuiet {
			t.Errorf("Observe after an interruption took %v, want %v", took, InterruptedQuiet)
		}
		if len(h.Readings) != 1 || h.Readings[0].Err != "" {
			t.Errorf("readings = %+v, want one without error", h.Readings)
		}
	})
}

// An http:// URL to a TLS server is named as such.
func TestPlainHTTPToTLS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	target := strings.Replace(srv.URL, "https://", "http://", 1)
	_, err := Prepare(context.Background(), load(t, scenario), Options{Target: target, Seed: 1})
	var te *TargetError
	if !errors.As(err, &te) || !te.TLS {
		t.Fatalf("Prepare(http:// to a TLS server) = %v, want a *TargetError with TLS set", err)
	}
	if !strings.Contains(err.Error(), "speaks TLS") {
		t.Errorf("error %q does not say the target speaks TLS", err)
	}
	// with setup requests too
	sc := load(t, scenario+"setup:\n  - {method: POST, path: /reset}\n")
	if _, err := Prepare(context.Background(), sc, Options{Target: target, Seed: 1}); !errors.As(err, &te) || !te.TLS {
		t.Errorf("Prepare(setup, http:// to a TLS server) = %v, want a *TargetError with TLS set", err)
	}
}
