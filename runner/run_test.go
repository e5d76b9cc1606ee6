package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/canon"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/scenarios"
)

func TestClosedIssuesExactlyOps(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 57, Concurrency: 5}
		sc.Users = []string{"alice", "bob"}
		sc.Operation.Headers = map[string]string{"Authorization": "Bearer {{.User}}"}
	})
	obs := &countingObserver{}
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	h, err := Run(runCtx(t), sc, Options{Target: s.URL, Seed: 7, Observer: obs, Now: func() time.Time { return start }})
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if got := len(h.Ops); got != 57 {
		t.Errorf("len(Ops) = %d, want 57", got)
	}
	if got := len(h.Attempts); got != 57 {
		t.Errorf("len(Attempts) = %d, want 57", got)
	}
	if got := len(s.requests()); got != 57 {
		t.Errorf("server received %d requests, want 57", got)
	}
	want := history.Meta{Scenario: "test", Target: s.URL.String(), Seed: 7, Started: start, Ended: start}
	if diff := cmp.Diff(want, h.Meta); diff != "" {
		t.Errorf("Meta mismatch (-want +got):\n%s", diff)
	}
	keys := map[string]bool{}
	for i, op := range h.Ops {
		if op.ID != i {
			t.Errorf("Ops[%d].ID = %d, want %d", i, op.ID, i)
		}
		if wantUser := []string{"alice", "bob"}[i%2]; op.User != wantUser {
			t.Errorf("Ops[%d].User = %q, want %q", i, op.User, wantUser)
		}
		keys[op.Key] = true
	}
	if len(keys) != 57 {
		t.Errorf("%d distinct keys, want 57", len(keys))
	}
	for _, r := range s.requests() {
		if !keys[r.Key] {
			t.Errorf("server got key %q, not in the history", r.Key)
		}
		if r.Auth != "Bearer alice" && r.Auth != "Bearer bob" {
			t.Errorf("Authorization = %q, want Bearer alice or Bearer bob", r.Auth)
		}
	}
	for i, a := range h.Attempts {
		if a.Op != i || a.N != 1 || a.Outcome != history.OK || a.Status != 201 || a.Fingerprint == 0 {
			t.Errorf("Attempts[%d] = %+v, want op %d attempt 1 ok 201 with a fingerprint", i, a, i)
		}
		if a.Start < a.Intended || a.End < a.Start {
			t.Errorf("Attempts[%d] times intended %v start %v end %v, want ordered", i, a.Intended, a.Start, a.End)
		}
	}
	if obs.total != 57 || obs.done.Load() != 57 || obs.acked.Load() != 57 {
		t.Errorf("observer Start(%d), %d OpDone (%d acked), want Start(57), 57 OpDone all acked", obs.total, obs.done.Load(), obs.acked.Load())
	}
}

type countingObserver struct {
	total int
	dur   time.Duration
	done  atomic.Int64
	acked atomic.Int64
}

func (o *countingObserver) Start(total int, d time.Duration) { o.total, o.dur = total, d }
func (o *countingObserver) OpDone(_ int, st history.OpState) {
	o.done.Add(1)
	if st == history.Acked {
		o.acked.Add(1)
	}
}

func TestClosedDuration(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Duration: scenarios.Duration(100 * time.Millisecond), Concurrency: 2}
	})
	begin := time.Now()
	h := mustRun(t, s, sc, 1)
	if el := time.Since(begin); el < 100*time.Millisecond || el > 5*time.Second {
		t.Errorf("Run took %v, want about 100ms", el)
	}
	if len(h.Ops) == 0 || len(h.Ops) != len(h.Attempts) {
		t.Errorf("%d ops, %d attempts; want some, one attempt each", len(h.Ops), len(h.Attempts))
	}
	if h.Meta.Interrupted {
		t.Errorf("Meta.Interrupted = true after a duration-bound load, want false")
	}
}

// TestOpenRate runs on synctest's fake clock, its server a handler in the
// bubble: the schedule, not the machine's load, decides what is sent.
func TestOpenRate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &server{}
		target, _ := url.Parse("http://open.test")
		sc := scenario(func(sc *scenarios.Scenario) {
			sc.Load = scenarios.Load{Duration: scenarios.Duration(300 * time.Millisecond), Rate: 100, MaxInFlight: 8}
		})
		h, err := Run(runCtx(t), sc, Options{Target: target, Transport: testenv.HandlerTransport(http.HandlerFunc(s.serve)), Seed: 1})
		if err != nil {
			t.Fatalf("Run() error = %v", err)
		}
		// 100/s for 300ms: ops due at 0, 10ms, ... 290ms.
		if n := len(h.Ops); n != 30 {
			t.Errorf("open model at 100/s for 300ms issued %d ops, want 30", n)
		}
		p := Pacer{Rate: 100}
		for _, op := range h.Ops {
			a := h.AttemptsOf(op.ID)
			if len(a) != 1 {
				t.Fatalf("op %d has %d attempts, want 1", op.ID, len(a))
			}
			if a[0].Intended != p.Due(op.ID) {
				t.Errorf("op %d intended at %v, want %v (its schedule)", op.ID, a[0].Intended, p.Due(op.ID))
			}
		}
	})
}

func TestOpenOps(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 40, Rate: 2000, MaxInFlight: 4}
	})
	h := mustRun(t, s, sc, 1)
	if len(h.Ops) != 40 || len(s.requests()) != 40 {
		t.Errorf("open model with ops 40: %d ops, %d requests, want 40", len(h.Ops), len(s.requests()))
	}
}

func TestOpenQueueingCountsInLatency(t *testing.T) {
	t.Parallel()
	// One worker, ops due every 1ms, each taking 20ms: later ops wait for
	// the worker and their latency, from the schedule, shows it.
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int64, _ []byte) {
		time.Sleep(20 * time.Millisecond)
		w.WriteHeader(http.StatusCreated)
	})
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 5, Rate: 1000, MaxInFlight: 1}
	})
	h := mustRun(t, s, sc, 1)
	last := h.AttemptsOf(4)[0]
	if lat := last.Latency(); lat < 80*time.Millisecond {
		t.Errorf("last op latency = %v, want >= 80ms (queued behind 4 ops of 20ms)", lat)
	}
	if last.Start-last.Intended < 60*time.Millisecond {
		t.Errorf("last op started %v after its schedule, want >= 60ms", last.Start-last.Intended)
	}
}

func TestRetriesKeepKeyAndStop(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int64, _ []byte) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 6, Concurrency: 3}
		sc.Retry.Attempts = 4
		sc.Operation.Body = `{"amount":{{randInt . 1 1000000}},"customer":"{{uuid .}}","attempt":1}`
	})
	h := mustRun(t, s, sc, 3)
	if got := len(s.requests()); got != 24 {
		t.Errorf("server got %d requests, want 6 ops x 4 attempts = 24", got)
	}
	bodies := map[string]map[string]bool{}
	for _, r := range s.requests() {
		if bodies[r.Key] == nil {
			bodies[r.Key] = map[string]bool{}
		}
		bodies[r.Key][r.Body] = true
	}
	for _, op := range h.Ops {
		if got := s.perKey()[op.Key]; got != 4 {
			t.Errorf("key of op %d sent %d times, want 4 (every retry keeps the key)", op.ID, got)
		}
		if len(bodies[op.Key]) != 1 {
			t.Errorf("op %d sent %d different bodies, want 1: %v", op.ID, len(bodies[op.Key]), bodies[op.Key])
		}
		as := h.AttemptsOf(op.ID)
		for i, a := range as {
			if a.N != i+1 || a.Status != 503 || a.Outcome != history.OK {
				t.Errorf("op %d attempt %d = %+v, want N %d ok 503", op.ID, i, a, i+1)
			}
			if i > 0 && a.Intended < as[i-1].End {
				t.Errorf("op %d attempt %d intended %v before the previous ended %v", op.ID, a.N, a.Intended, as[i-1].End)
			}
		}
		if st := history.State(as); st != history.Indeterminate {
			t.Errorf("op %d state = %v, want indeterminate", op.ID, st)
		}
	}
}

func TestNonRetryableStatusEndsOp(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int64, _ []byte) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		io.WriteString(w, `{"title":"mismatch","status":422}`)
	})
	h := mustRun(t, s, scenario(func(sc *scenarios.Scenario) { sc.Load.Ops = 5 }), 3)
	if len(h.Attempts) != 5 || len(s.requests()) != 5 {
		t.Errorf("%d attempts, %d requests, want 5 and 5 (422 is not retried)", len(h.Attempts), len(s.requests()))
	}
	for _, a := range h.Attempts {
		if a.Status != 422 || a.N != 1 {
			t.Errorf("attempt %+v, want N 1 status 422", a)
		}
	}
}

func TestRetryOn409ThenSuccess(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	tries := map[string]int{}
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int64, _ []byte) {
		mu.Lock()
		k := r.Header.Get("Idempotency-Key")
		tries[k]++
		n := tries[k]
		mu.Unlock()
		if n < 3 {
			w.WriteHeader(http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	h := mustRun(t, s, scenario(func(sc *scenarios.Scenario) { sc.Load.Ops = 4 }), 3)
	for _, op := range h.Ops {
		var got []int
		for _, a := range h.AttemptsOf(op.ID) {
			got = append(got, a.Status)
		}
		if diff := cmp.Diff([]int{409, 409, 201}, got); diff != "" {
			t.Errorf("op %d statuses mismatch (-want +got):\n%s", op.ID, diff)
		}
	}
}

// faultSeq is what must be the same for the same seed.
type faultSeq struct {
	Op, N   int
	Fault   string
	Outcome history.Outcome
}

func TestFaultsDeterministic(t *testing.T) {
	t.Parallel()
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 60, Concurrency: 6}
		sc.Faults = []scenarios.Fault{
			{Kind: "drop_ack", Rate: 0.3},
			{Kind: "reset", Rate: 0.2},
			{Kind: "duplicate", Rate: 0.1, Copies: 2},
		}
	})
	run := func(seed uint64) ([]faultSeq, []history.Op) {
		s := newServer(t, nil)
		h := mustRun(t, s, sc, seed)
		var seq []faultSeq
		for _, a := range h.Attempts {
			seq = append(seq, faultSeq{a.Op, a.N, a.Fault, a.Outcome})
			switch a.Fault {
			case "drop_ack":
				if a.Outcome != history.Info {
					t.Errorf("drop_ack attempt %d/%d outcome %v, want info", a.Op, a.N, a.Outcome)
				}
			case "reset":
				if a.Outcome != history.Fail {
					t.Errorf("reset attempt %d/%d outcome %v, want fail", a.Op, a.N, a.Outcome)
				}
			case "", "duplicate":
				if a.Outcome != history.OK {
					t.Errorf("attempt %d/%d (fault %q) outcome %v, want ok", a.Op, a.N, a.Fault, a.Outcome)
				}
			}
		}
		return seq, h.Ops
	}
	seq1, ops1 := run(42)
	seq2, ops2 := run(42)
	if diff := cmp.Diff(seq1, seq2); diff != "" {
		t.Errorf("same seed, different fault sequences (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(ops1, ops2); diff != "" {
		t.Errorf("same seed, different ops (-first +second):\n%s", diff)
	}
	kinds := map[string]int{}
	for _, a := range seq1 {
		kinds[a.Fault]++
	}
	for _, k := range []string{"", "drop_ack", "reset", "duplicate"} {
		if kinds[k] == 0 {
			t.Errorf("no attempt with fault %q in %v", k, kinds)
		}
	}
	seq3, ops3 := run(43)
	if cmp.Equal(seq1, seq3) || cmp.Equal(ops1, ops3) {
		t.Errorf("seeds 42 and 43 gave the same faults or keys")
	}
}

func TestNaiveServerChargesAgainUnderDropAck(t *testing.T) {
	t.Parallel()
	// A naive endpoint processes every request; with lost acks the client
	// retries, so some keys reach the server more than once.
	s := newServer(t, nil)
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 30, Concurrency: 3}
		sc.Faults = []scenarios.Fault{{Kind: "drop_ack", Rate: 0.5}}
	})
	h := mustRun(t, s, sc, 5)
	counts := s.perKey()
	dup := 0
	for _, op := range h.Ops {
		as := h.AttemptsOf(op.ID)
		if counts[op.Key] != len(as) {
			t.Errorf("op %d: %d attempts recorded, server got %d", op.ID, len(as), counts[op.Key])
		}
		if counts[op.Key] > 1 {
			dup++
			if as[0].Fault != "drop_ack" || as[0].Outcome != history.Info {
				t.Errorf("op %d first attempt %+v, want a drop_ack with outcome info", op.ID, as[0])
			}
		}
	}
	if dup == 0 {
		t.Errorf("no key reached the server twice under drop_ack 0.5: %v", counts)
	}
}

func TestBodyField(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 3, Concurrency: 1}
		sc.Operation.Path = "/posts/p1/like"
		sc.Operation.Body = `{"op_id":"placeholder","n":{{.Seq}}}`
		sc.Operation.Key = scenarios.KeyPlace{BodyField: "op_id"}
	})
	h := mustRun(t, s, sc, 9)
	reqs := s.requests()
	if len(reqs) != 3 {
		t.Fatalf("server got %d requests, want 3", len(reqs))
	}
	byKey := map[string]map[string]any{}
	for _, r := range reqs {
		if r.Key != "" {
			t.Errorf("Idempotency-Key header = %q with body_field placement, want none", r.Key)
		}
		m := jsonBody(t, r.Body)
		byKey[fmt.Sprint(m["op_id"])] = m
	}
	for _, op := range h.Ops {
		m, ok := byKey[op.Key]
		if !ok {
			t.Errorf("no request carried op %d's key %q in op_id: %v", op.ID, op.Key, byKey)
			continue
		}
		if m["n"] != float64(op.ID) {
			t.Errorf("op %d body n = %v, want %d (other fields kept)", op.ID, m["n"], op.ID)
		}
	}
}

func TestKeyNone(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 2, Concurrency: 1}
		sc.Operation.Key = scenarios.KeyPlace{None: true}
	})
	h := mustRun(t, s, sc, 9)
	for _, r := range s.requests() {
		if r.Key != "" {
			t.Errorf("key none sent Idempotency-Key %q", r.Key)
		}
	}
	if h.Ops[0].Key == "" {
		t.Errorf("key none: op has no key in the history, want a generated one")
	}
}

func TestBefore(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int64, body []byte) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/accounts/a1":
			io.WriteString(w, `{"id":"a1","balance":1000,"version":3,"owner":{"name":"x"}}`)
		case r.Method == http.MethodGet:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"title":"not found"}`)
		default:
			w.Write(body)
		}
	})
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 2, Concurrency: 1}
		sc.Operation.Path = "/accounts/a1/debit"
		sc.Operation.Body = `{"amount":10,"expected_version":{{.Vars.version}},"name":"{{.Vars.name}}"}`
		sc.Operation.Before = &scenarios.Capture{
			Request: scenarios.Request{Path: "/accounts/a1"},
			Vars:    map[string]string{"version": "$.version", "name": "$.owner.name"},
		}
		sc.Response.Fields = map[string]string{"v": "$.expected_version", "missing": "$.nope"}
	})
	h := mustRun(t, s, sc, 1)
	var got []string
	for _, r := range s.requests() {
		got = append(got, r.Method+" "+r.Path+" "+r.Body)
	}
	want := []string{
		"GET /accounts/a1 ",
		`POST /accounts/a1/debit {"amount":10,"expected_version":3,"name":"x"}`,
		"GET /accounts/a1 ",
		`POST /accounts/a1/debit {"amount":10,"expected_version":3,"name":"x"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests mismatch (-want +got):\n%s", diff)
	}
	for _, a := range h.Attempts {
		if diff := cmp.Diff(map[string]string{"v": "3"}, a.Fields); diff != "" {
			t.Errorf("attempt %d/%d Fields mismatch (-want +got):\n%s", a.Op, a.N, diff)
		}
	}

	// A before read that fails ends its op with one fail attempt, unsent.
	sc.Operation.Before.Path = "/accounts/missing"
	s.mu.Lock()
	s.reqs = nil
	s.mu.Unlock()
	h = mustRun(t, s, sc, 1)
	for _, r := range s.requests() {
		if r.Method != http.MethodGet {
			t.Errorf("operation sent after a failed before read: %+v", r)
		}
	}
	for _, a := range h.Attempts {
		if a.N != 1 || a.Outcome != history.Fail || !strings.HasPrefix(a.Err, "operation.before:") || !strings.Contains(a.Err, "404") {
			t.Errorf("attempt after a failed before = %+v, want N 1, fail, Err operation.before: ... 404", a)
		}
	}
	if len(h.Attempts) != 2 {
		t.Errorf("%d attempts, want 2 (one per op, not retried)", len(h.Attempts))
	}
}

func TestFieldsAndVolatileFingerprint(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int64, _ []byte) {
		w.WriteHeader(http.StatusCreated)
		// same answer each time, but for the date, with keys reordered
		if n%2 == 0 {
			fmt.Fprintf(w, `{"id":"ch_1","amount":100,"created":"2024-01-0%d"}`, n%9)
		} else {
			fmt.Fprintf(w, `{ "created": "2024-02-0%d", "amount": 100, "id": "ch_1" }`, n%9)
		}
	})
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 6, Concurrency: 2}
		sc.Response.Fields = map[string]string{"id": "$.id", "amount": "$.amount"}
		sc.Response.Volatile = []string{"$.created"}
	})
	h := mustRun(t, s, sc, 1)
	want := canon.Fingerprint([]byte(`{"amount":100,"id":"ch_1"}`), nil)
	for _, a := range h.Attempts {
		if uint64(a.Fingerprint) != want {
			t.Errorf("attempt %d fingerprint %x, want %x (date removed, keys sorted)", a.Op, a.Fingerprint, want)
		}
		if diff := cmp.Diff(map[string]string{"id": "ch_1", "amount": "100"}, a.Fields); diff != "" {
			t.Errorf("attempt %d Fields mismatch (-want +got):\n%s", a.Op, diff)
		}
	}
}

func TestCancelReturnsPartialHistory(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 100)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int64, _ []byte) {
		arrived <- struct{}{}
		<-r.Context().Done() // hang until the client gives up
	})
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 1000, Concurrency: 3}
	})
	ctx, cancel := context.WithCancel(runCtx(t))
	type result struct {
		h   *history.History
		err error
	}
	done := make(chan result, 1)
	go func() {
		h, err := Run(ctx, sc, Options{Target: s.URL, Seed: 1})
		done <- result{h, err}
	}()
	for range 3 {
		select {
		case <-arrived:
		case <-time.After(bound):
			t.Fatal("requests did not arrive")
		}
	}
	cancel()
	var res result
	select {
	case res = <-done:
	case <-time.After(bound):
		t.Fatal("Run did not return after cancellation")
	}
	if !errors.Is(res.err, context.Canceled) {
		t.Errorf("Run() error = %v, want context.Canceled", res.err)
	}
	h := res.h
	if h == nil || !h.Meta.Interrupted {
		t.Fatalf("history %v, want a partial history with Interrupted", h)
	}
	if len(h.Ops) < 3 || len(h.Ops) > 10 {
		t.Errorf("%d ops recorded, want the few in flight (3..10)", len(h.Ops))
	}
	info := 0
	for _, a := range h.Attempts {
		if a.Outcome == history.Info {
			info++
		}
		if a.Outcome == history.OK {
			t.Errorf("attempt %+v is ok, the server never answered", a)
		}
	}
	if info != 3 {
		t.Errorf("%d info attempts, want 3 (the cancelled in-flight ones)", info)
	}
	if len(h.Attempts) != 3 {
		t.Errorf("%d attempts, want 3 (no retry after cancellation)", len(h.Attempts))
	}
}

func TestUnreachableTarget(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	u, _ := url.Parse("http://" + addr)
	sc := scenario(func(sc *scenarios.Scenario) { sc.Load = scenarios.Load{Ops: 3, Concurrency: 2} })
	h, err := Run(runCtx(t), sc, Options{Target: u, Seed: 1})
	if !errors.Is(err, ErrTarget) {
		t.Fatalf("Run() error = %v, want ErrTarget", err)
	}
	if h == nil || len(h.Attempts) != 15 {
		t.Fatalf("history with %v attempts, want 15 (3 ops x 5 attempts)", h)
	}
	for _, a := range h.Attempts {
		if a.Outcome != history.Fail || a.Err == "" {
			t.Errorf("attempt %+v, want outcome fail (connection refused) with an error", a)
		}
	}
}

func TestRenderErrorIsRecorded(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 2, Concurrency: 1}
		sc.Operation.Body = `{"v":"{{.Vars.nope}}"}`
	})
	h, err := Run(runCtx(t), sc, Options{Target: s.URL, Seed: 1})
	var te *scenarios.TemplateError
	if !errors.As(err, &te) {
		t.Errorf("Run() error = %v, want a *scenarios.TemplateError", err)
	}
	if len(s.requests()) != 0 {
		t.Errorf("server got %d requests, want 0", len(s.requests()))
	}
	if h == nil || len(h.Attempts) != 2 || h.Attempts[0].Outcome != history.Fail || !strings.HasPrefix(h.Attempts[0].Err, "render:") {
		t.Errorf("history attempts %+v, want one fail attempt per op with Err render: ...", h)
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	tests := []struct {
		name string
		edit func(sc *scenarios.Scenario)
	}{
		{"bad template", func(sc *scenarios.Scenario) { sc.Operation.Body = "{{" }},
		{"bad field path", func(sc *scenarios.Scenario) { sc.Response.Fields = map[string]string{"id": "$["} }},
		{"bad volatile path", func(sc *scenarios.Scenario) { sc.Response.Volatile = []string{"nope"} }},
		{"bad fault", func(sc *scenarios.Scenario) { sc.Faults = []scenarios.Fault{{Kind: "meteor", Rate: 0.1}} }},
		{"endless load", func(sc *scenarios.Scenario) { sc.Load = scenarios.Load{Concurrency: 1} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := Run(runCtx(t), scenario(tt.edit), Options{Target: s.URL})
			if err == nil || h != nil {
				t.Errorf("Run() = %v, %v, want nil and an error", h, err)
			}
		})
	}
	if n := len(s.requests()); n != 0 {
		t.Errorf("server got %d requests, want 0", n)
	}
}

func TestSetup(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int64, _ []byte) {
		if r.URL.Path == "/broken" {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"title":"database on fire"}`)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Setup = []scenarios.Request{
			{Method: "PUT", Path: "/accounts/a1", Body: `{"balance":{{env "BALANCE"}}}`},
			{Method: "POST", Path: "/reset"},
		}
	})
	env := func(k string) string { return map[string]string{"BALANCE": "1000"}[k] }
	if err := Setup(runCtx(t), sc, Options{Target: s.URL, Env: env}); err != nil {
		t.Fatalf("Setup() error = %v", err)
	}
	var got []string
	for _, r := range s.requests() {
		got = append(got, r.Method+" "+r.Path+" "+r.Body)
	}
	want := []string{`PUT /accounts/a1 {"balance":1000}`, "POST /reset "}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("setup requests mismatch (-want +got):\n%s", diff)
	}

	sc.Setup = append(sc.Setup, scenarios.Request{Path: "/broken"})
	err := Setup(runCtx(t), sc, Options{Target: s.URL, Env: env})
	var se *SetupError
	if !errors.As(err, &se) || se.Err.Status != 500 || errors.Is(err, ErrTarget) {
		t.Fatalf("Setup() error = %v, want a *SetupError with the 500 (the target answered: it is not unreachable)", err)
	}
	for _, want := range []string{"setup[2]", "GET", "/broken", "500", "database on fire"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Setup() error = %q, want it to name %q", err, want)
		}
	}
}

func TestKeysAndBodiesIndependentOfScheduling(t *testing.T) {
	t.Parallel()
	bodies := func(workers int, rate float64) map[string]string {
		s := newServer(t, nil)
		sc := scenario(func(sc *scenarios.Scenario) {
			sc.Load = scenarios.Load{Ops: 30, Concurrency: workers, Rate: scenarios.Rate(rate), MaxInFlight: 8}
			sc.Operation.Body = `{"amount":{{randInt . 1 1000000}},"ref":"{{uuid .}}","seq":{{.Seq}}}`
		})
		h := mustRun(t, s, sc, 11)
		m := map[string]string{}
		for _, r := range s.requests() {
			m[r.Key] = r.Body
		}
		got := map[string]string{}
		for _, op := range h.Ops {
			got[fmt.Sprint(op.ID, " ", op.Key)] = m[op.Key]
		}
		return got
	}
	one := bodies(1, 0)
	if diff := cmp.Diff(one, bodies(7, 0)); diff != "" {
		t.Errorf("1 worker vs 7 workers, same seed: ops differ (-1 +7):\n%s", diff)
	}
	if diff := cmp.Diff(one, bodies(0, 3000)); diff != "" {
		t.Errorf("closed vs open model, same seed: ops differ (-closed +open):\n%s", diff)
	}
}

func TestTimeoutAndDelayFaults(t *testing.T) {
	t.Parallel()
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
		sc.Faults = []scenarios.Fault{
			{Kind: "timeout", Rate: 0.5, After: 20 * time.Millisecond, Attempts: []int{1}},
			{Kind: "delay", Rate: 0.5, Delay: time.Millisecond, Attempts: []int{1}},
		}
	})
	// Find a seed whose op 0 gets each fault on its first attempt.
	for _, kind := range []string{"timeout", "delay"} {
		t.Run(kind, func(t *testing.T) {
			s.count.Store(0)
			var h *history.History
			for seed := uint64(0); seed < 100; seed++ {
				h = mustRun(t, s, sc, seed)
				if h.Attempts[0].Fault == kind {
					break
				}
				s.count.Store(0)
			}
			as := h.Attempts
			switch kind {
			case "timeout":
				if len(as) != 2 || as[0].Outcome != history.Info || !strings.Contains(as[0].Err, "timeout") || as[1].Status != 201 {
					t.Errorf("timeout fault: attempts %+v, want an info timeout then a 201", as)
				}
			case "delay":
				if len(as) != 1 || as[0].Outcome != history.OK || as[0].Start-as[0].Intended > time.Second {
					t.Errorf("delay fault: attempts %+v, want one ok attempt", as)
				}
				if as[0].End-as[0].Start < time.Millisecond {
					t.Errorf("delay fault: attempt took %v, want >= 1ms", as[0].End-as[0].Start)
				}
			}
		})
	}
}

func TestGivenTransport(t *testing.T) {
	t.Parallel()
	s := newServer(t, nil)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	var calls atomic.Int64
	rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		calls.Add(1)
		return tr.RoundTrip(req)
	})
	sc := scenario(func(sc *scenarios.Scenario) { sc.Load = scenarios.Load{Ops: 4, Concurrency: 2} })
	if _, err := Run(runCtx(t), sc, Options{Target: s.URL, Transport: rt}); err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if calls.Load() != 4 {
		t.Errorf("given transport called %d times, want 4", calls.Load())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// The key nonce changes every key and nothing else: a second run with the
// same seed against a stateful target must not send the first run's keys.
func TestKeyNonce(t *testing.T) {
	t.Parallel()
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 20, Concurrency: 4}
		sc.Faults = []scenarios.Fault{{Kind: "drop_ack", Rate: 0.3}}
	})
	s := newServer(t, nil)
	run := func(nonce uint64) *history.History {
		h, err := Run(runCtx(t), sc, Options{Target: s.URL, Seed: 9, KeyNonce: nonce})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a, b, c := run(0), run(77), run(77)
	if diff := cmp.Diff(b.Ops, c.Ops); diff != "" {
		t.Errorf("same seed and nonce, different keys (-first +second):\n%s", diff)
	}
	if b.Meta.KeyNonce != 77 {
		t.Errorf("Meta.KeyNonce = %d, want 77", b.Meta.KeyNonce)
	}
	for i := range a.Ops {
		if a.Ops[i].Key == b.Ops[i].Key {
			t.Errorf("op %d: key %s with nonce 0 and with nonce 77, want different keys", i, a.Ops[i].Key)
		}
	}
	faultsOf := func(h *history.History) (out []string) {
		for _, at := range h.Attempts {
			out = append(out, fmt.Sprintf("%d/%d/%s", at.Op, at.N, at.Fault))
		}
		return out
	}
	if diff := cmp.Diff(faultsOf(a), faultsOf(b)); diff != "" {
		t.Errorf("the nonce changed the fault placement (-nonce 0 +nonce 77):\n%s", diff)
	}
}

// A body-less POST with an Idempotency-Key header must still reach the
// server as an empty body, and must not be one net/http may resend.
func TestBodylessPostIsNotReplayable(t *testing.T) {
	t.Parallel()
	var cl atomic.Value
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cl.Store(fmt.Sprintf("%d %v %q", r.ContentLength, r.TransferEncoding, r.Header.Get("Idempotency-Key")))
		w.WriteHeader(http.StatusCreated)
	}))
	defer s.Close()
	req, _ := http.NewRequest(http.MethodPost, s.URL, nil)
	req.Header.Set("Idempotency-Key", "k1")
	NoHiddenResend(req)
	if _, ok := req.Header["Idempotency-Key"]; ok || req.GetBody != nil {
		t.Fatalf("NoHiddenResend left a request net/http may resend: header %v, GetBody set %v", req.Header, req.GetBody != nil)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := cl.Load(), `0 [] "k1"`; got != want {
		t.Errorf("server saw content-length, transfer-encoding, key = %v, want %v", got, want)
	}
}

// connReqs counts the requests a test server has read on one connection.
type connReqs struct{}

// breakingServer answers 201 to the first request on each connection and
// breaks every later one: it reads the request whole, then closes the
// connection without answering, as a server restarting under a kept-alive
// connection does. It counts every request it read and every one it broke.
func breakingServer(t *testing.T) (u *url.URL, reqs, broken *atomic.Int64) {
	t.Helper()
	reqs, broken = new(atomic.Int64), new(atomic.Int64)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		reqs.Add(1)
		if r.Context().Value(connReqs{}).(*atomic.Int64).Add(1) > 1 {
			broken.Add(1)
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connReqs{}, new(atomic.Int64))
	}
	srv.Start()
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u, reqs, broken
}

// net/http resends a request on a new connection, unseen by the caller,
// when a kept-alive connection breaks under a request it deems replayable:
// a POST with an Idempotency-Key header and a body it can rewind. The
// runner's requests, static or templated, must never be resent: every
// request the server reads is an attempt in the history.
func TestPostIsNeverResentByNetHTTP(t *testing.T) {
	t.Parallel()
	// The harness sees a hidden resend: a rewindable keyed POST sent twice
	// on one connection reaches the server three times.
	u, reqs, broken := breakingServer(t)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	for range 2 {
		req, err := http.NewRequest(http.MethodPost, u.String(), strings.NewReader(`{"amount":100}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("RoundTrip() error = %v, want the transport to resend and succeed", err)
		}
		resp.Body.Close()
	}
	if got, want := fmt.Sprint(reqs.Load(), broken.Load()), "3 1"; got != want {
		t.Fatalf("harness: requests read, broken = %s, want %s (net/http resends on its own)", got, want)
	}

	// The runner's requests through its default client (internal/h1) and
	// through net/http's Transport (a TLS target, a proxy).
	for _, client := range []string{"h1", "net/http"} {
		for _, tt := range []struct{ name, body string }{
			{"static", `{"amount":100}`},
			{"templated", `{"amount":100,"customer":"cus_{{.Seq}}"}`},
		} {
			t.Run(client+"/"+tt.name, func(t *testing.T) {
				u, reqs, broken := breakingServer(t)
				sc := scenario(func(sc *scenarios.Scenario) {
					sc.Operation.Body = tt.body
					sc.Load = scenarios.Load{Ops: 6, Concurrency: 1}
					sc.Retry.Attempts = 1
				})
				opts := Options{Target: u, Seed: 1}
				if client == "net/http" {
					tr := NewTransport(1)
					defer tr.CloseIdleConnections()
					opts.Transport = tr
				}
				h, err := Run(runCtx(t), sc, opts)
				if err != nil {
					t.Fatalf("Run() error = %v", err)
				}
				info := 0
				for _, a := range h.Attempts {
					if a.Outcome == history.Info {
						info++
					}
				}
				if broken.Load() == 0 {
					t.Fatal("the server broke no connection: the test proves nothing")
				}
				if got, want := fmt.Sprint(reqs.Load(), len(h.Attempts), info), fmt.Sprint(6, 6, broken.Load()); got != want {
					t.Errorf("requests read, attempts, info attempts = %s, want %s (a broken request is not resent)", got, want)
				}
			})
		}
	}
}

// history cannot import faults: the duplicate fault's name is written twice
// and must agree, or a 4xx to a duplicated send would count as a rejection.
func TestDuplicateFaultNameAgrees(t *testing.T) {
	t.Parallel()
	if faults.KindDuplicate != history.FaultDuplicate {
		t.Errorf("faults.KindDuplicate = %q, history.FaultDuplicate = %q: they must be equal", faults.KindDuplicate, history.FaultDuplicate)
	}
}
