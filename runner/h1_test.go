package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/h1"
	"github.com/idemcheck/idemcheck/scenarios"
)

// The runner's behaviours through internal/h1 in place of net/http's
// Transport: faults, the history, the request timeout and the
// no-hidden-resend guarantee must not depend on the client.

// h1Options are the options of a run against u through an h1 transport.
func h1Options(t *testing.T, u *url.URL, seed uint64) Options {
	t.Helper()
	tr := h1.New(NewTransport(8), 8)
	t.Cleanup(tr.CloseIdleConnections)
	return Options{Target: u, Seed: seed, Transport: tr}
}

func TestH1FaultsAndHistory(t *testing.T) {
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 60, Concurrency: 6}
		sc.Faults = []scenarios.Fault{
			{Kind: "drop_ack", Rate: 0.3},
			{Kind: "reset", Rate: 0.2},
			{Kind: "duplicate", Rate: 0.1, Copies: 2},
		}
	})
	run := func(viaH1 bool) ([]faultSeq, []history.Op) {
		s := newServer(t, nil)
		opts := Options{Target: s.URL, Seed: 42}
		if viaH1 {
			opts = h1Options(t, s.URL, 42)
		}
		h, err := Run(runCtx(t), sc, opts)
		if err != nil {
			t.Fatalf("Run() error = %v", err)
		}
		counts := s.perKey()
		var seq []faultSeq
		for _, op := range h.Ops {
			sent := 0
			for _, a := range h.AttemptsOf(op.ID) {
				seq = append(seq, faultSeq{a.Op, a.N, a.Fault, a.Outcome})
				switch a.Fault {
				case "drop_ack":
					sent++
					if a.Outcome != history.Info || len(a.Answers) != 1 || !a.Answers[0].Hidden || a.Answers[0].Status != 201 {
						t.Errorf("drop_ack attempt %d/%d = %+v, want info with the hidden 201", a.Op, a.N, a)
					}
				case "reset":
					if a.Outcome != history.Fail {
						t.Errorf("reset attempt %d/%d outcome %v, want fail", a.Op, a.N, a.Outcome)
					}
				case "duplicate":
					sent += 2
					if a.Outcome != history.OK || a.Copies != 2 || len(a.Answers) != 1 || a.Answers[0].Fingerprint != a.Fingerprint {
						t.Errorf("duplicate attempt %d/%d = %+v, want ok with the other copy's answer", a.Op, a.N, a)
					}
				default:
					sent++
					if a.Outcome != history.OK || a.Status != 201 || a.Fingerprint == 0 {
						t.Errorf("attempt %d/%d = %+v, want ok 201 with a fingerprint", a.Op, a.N, a)
					}
				}
			}
			if counts[op.Key] != sent {
				t.Errorf("op %d: the server got %d requests, the history shows %d sends", op.ID, counts[op.Key], sent)
			}
		}
		return seq, h.Ops
	}
	netSeq, netOps := run(false)
	h1Seq, h1Ops := run(true)
	if diff := cmp.Diff(netSeq, h1Seq); diff != "" {
		t.Errorf("same seed, other faults or outcomes through h1 (-net/http +h1):\n%s", diff)
	}
	if diff := cmp.Diff(netOps, h1Ops); diff != "" {
		t.Errorf("same seed, other ops through h1 (-net/http +h1):\n%s", diff)
	}
}

func TestH1DuplicateAndDropAck(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int64, _ []byte) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":"ch_%s","n":%d}`, r.Header.Get("Idempotency-Key"), n)
	})
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 3, Concurrency: 1}
		sc.Faults = onlyFault("duplicate")
		sc.Response.Volatile = []string{"$.n"}
		sc.Response.Fields = map[string]string{"charge": "$.id"}
	})
	h, err := Run(runCtx(t), sc, h1Options(t, s.URL, 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Attempts) != 3 || len(s.requests()) != 9 {
		t.Fatalf("%d attempts, %d requests; want 3 and 9", len(h.Attempts), len(s.requests()))
	}
	for _, a := range h.Attempts {
		if a.Copies != 3 || a.Status != 201 || len(a.Answers) != 2 || a.Fields["charge"] == "" {
			t.Errorf("duplicate attempt %+v: want 3 copies, 201, 2 other answers, a charge field", a)
		}
		for _, o := range a.Answers {
			if o.Outcome != history.OK || o.Fingerprint != a.Fingerprint || o.Fields["charge"] != a.Fields["charge"] {
				t.Errorf("op %d copy %d = %+v, want ok with the attempt's fingerprint and fields", a.Op, o.Copy, o)
			}
		}
	}

	sc.Faults = onlyFault("drop_ack", 1)
	sc.Retry.Attempts = 2
	s.count.Store(0)
	h, err = Run(runCtx(t), sc, h1Options(t, s.URL, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range h.Ops {
		as := h.AttemptsOf(op.ID)
		if len(as) != 2 || as[0].Outcome != history.Info || len(as[0].Answers) != 1 || !as[0].Answers[0].Hidden || as[1].Status != 201 {
			t.Errorf("op %d attempts %+v, want a drop_ack (info, one hidden answer) then a 201", op.ID, as)
		}
	}
}

func TestH1TimeoutFault(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int64, _ []byte) {
		if n == 1 {
			select { // the first request is slow: the client gives up on it
			case <-time.After(200 * time.Millisecond):
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusCreated)
	})
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 1, Concurrency: 1}
		sc.Faults = []scenarios.Fault{{Kind: "timeout", Rate: 1, After: scenarios.Duration(20 * time.Millisecond), Attempts: []int{1}}}
	})
	h, err := Run(runCtx(t), sc, h1Options(t, s.URL, 1))
	if err != nil {
		t.Fatal(err)
	}
	as := h.Attempts
	if len(as) != 2 || as[0].Outcome != history.Info || !strings.Contains(as[0].Err, "injected timeout") || as[1].Status != 201 {
		t.Errorf("timeout fault: attempts %+v, want an info injected timeout then a 201", as)
	}
}

func TestH1RequestTimeout(t *testing.T) {
	s := hangingServer(t, func(n int64, _ *http.Request) bool { return n == 1 })
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 3, Concurrency: 1}
		sc.Retry.Attempts = 1
	})
	opts := h1Options(t, s.URL, 1)
	opts.RequestTimeout = 100 * time.Millisecond
	h, err := Run(runCtx(t), sc, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(h.Attempts) != 3 {
		t.Fatalf("%d attempts, want 3 (the run goes on)", len(h.Attempts))
	}
	if a := h.Attempts[0]; a.Outcome != history.Info || a.Err != "no answer within 100ms (request timeout)" || a.End-a.Start < 100*time.Millisecond {
		t.Errorf("attempt over the timeout = %+v, want info, the request timeout's error, >= 100ms", a)
	}
	for _, a := range h.Attempts[1:] {
		if a.Status != 201 {
			t.Errorf("attempt %+v, want 201", a)
		}
	}
}

func TestH1UnreachableAndCancel(t *testing.T) {
	u := &url.URL{Scheme: "http", Host: closedAddr(t)}
	sc := scenario(func(sc *scenarios.Scenario) { sc.Load = scenarios.Load{Ops: 3, Concurrency: 2} })
	h, err := Run(runCtx(t), sc, h1Options(t, u, 1))
	if !errors.Is(err, ErrTarget) {
		t.Fatalf("Run() error = %v, want ErrTarget", err)
	}
	for _, a := range h.Attempts {
		if a.Outcome != history.Fail || a.Err == "" {
			t.Errorf("attempt %+v, want outcome fail (connection refused) with an error", a)
		}
	}

	arrived := make(chan struct{}, 100)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int64, _ []byte) {
		arrived <- struct{}{}
		<-r.Context().Done()
	})
	sc = scenario(func(sc *scenarios.Scenario) { sc.Load = scenarios.Load{Ops: 1000, Concurrency: 3} })
	ctx, cancel := context.WithCancel(runCtx(t))
	go func() {
		for range 3 {
			<-arrived
		}
		cancel()
	}()
	h, err = Run(ctx, sc, h1Options(t, s.URL, 1))
	if !errors.Is(err, context.Canceled) || h == nil || !h.Meta.Interrupted {
		t.Fatalf("Run() = %v, %v; want a partial history and context.Canceled", h, err)
	}
	if len(h.Attempts) != 3 {
		t.Errorf("%d attempts, want the 3 in flight", len(h.Attempts))
	}
	for _, a := range h.Attempts {
		if a.Outcome != history.Info {
			t.Errorf("cancelled attempt %+v, want info", a)
		}
	}
}
