package runner

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// onlyFault is a scenario fault hitting every attempt numbered in attempts.
func onlyFault(kind string, attempts ...int) []scenarios.Fault {
	f := scenarios.Fault{Kind: kind, Rate: 1, Attempts: attempts}
	if kind == "duplicate" {
		f.Copies = 3
	}
	return []scenarios.Fault{f}
}

func TestDuplicateRecordsEveryCopy(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int64, _ []byte) {
		w.WriteHeader(http.StatusCreated)
		// n differs per copy and is volatile; id is kept as a field.
		fmt.Fprintf(w, `{"id":"ch_%s","n":%d}`, r.Header.Get("Idempotency-Key"), n)
	})
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 3, Concurrency: 1}
		sc.Faults = onlyFault("duplicate")
		sc.Response.Volatile = []string{"$.n"}
		sc.Response.Fields = map[string]string{"charge": "$.id"}
	})
	h := mustRun(t, s, sc, 1)
	if len(h.Attempts) != 3 || len(s.requests()) != 9 {
		t.Fatalf("%d attempts, %d requests; want 3 and 9", len(h.Attempts), len(s.requests()))
	}
	for _, a := range h.Attempts {
		if a.Copies != 3 || a.Status != 201 || len(a.Answers) != 2 {
			t.Errorf("attempt %+v: want 3 copies, 201, 2 other answers", a)
			continue
		}
		for i, o := range a.Answers {
			if o.Copy != i+2 || o.Hidden || o.Outcome != history.OK || o.Status != 201 || o.End < a.Start || o.End > a.End {
				t.Errorf("op %d answer %d = %+v, want copy %d, ok 201, ended during the attempt", a.Op, i, o, i+2)
			}
			if o.Fingerprint != a.Fingerprint || o.Fields["charge"] != a.Fields["charge"] || a.Fields["charge"] == "" {
				t.Errorf("op %d copy %d = fingerprint %v fields %v, want %v %v (same normaliser)", a.Op, o.Copy, o.Fingerprint, o.Fields, a.Fingerprint, a.Fields)
			}
		}
	}
}

func TestDropAckRecordsHiddenAnswer(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	first := map[string]string{}
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, n int64, _ []byte) {
		k := r.Header.Get("Idempotency-Key")
		mu.Lock()
		if first[k] == "" {
			first[k] = fmt.Sprintf(`{"id":"ch_%d"}`, n)
		}
		body := first[k]
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, body) // a replay of the first answer
	})
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 2, Concurrency: 1}
		sc.Faults = onlyFault("drop_ack", 1)
	})
	h := mustRun(t, s, sc, 1)
	for _, op := range h.Ops {
		as := h.AttemptsOf(op.ID)
		if len(as) != 2 {
			t.Fatalf("op %d: %d attempts, want drop_ack then a 201", op.ID, len(as))
		}
		a := as[0]
		if a.Outcome != history.Info || len(a.Answers) != 1 {
			t.Fatalf("op %d attempt 1 = %+v, want info with one hidden answer", op.ID, a)
		}
		hid := a.Answers[0]
		if !hid.Hidden || hid.Copy != 0 || hid.Outcome != history.OK || hid.Status != 201 || hid.Fingerprint != as[1].Fingerprint || hid.Fingerprint == 0 {
			t.Errorf("op %d hidden answer = %+v, want hidden ok 201 with the retry's fingerprint %v", op.ID, hid, as[1].Fingerprint)
		}
		if as[1].Answers != nil || as[1].Copies != 0 {
			t.Errorf("op %d clean attempt = %+v, want no other answers", op.ID, as[1])
		}
	}
}

// TestBigBodyUnderDuplicate: an answer far past MaxBody under a duplicate
// keeps its size and gets the same whole-body fingerprint as without a
// fault, for every copy.
func TestBigBodyUnderDuplicate(t *testing.T) {
	t.Parallel()
	const size = 1 << 20
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int64, _ []byte) {
		writeBody(w, size)
	})
	run := func(faults []scenarios.Fault) history.Attempt {
		sc := scenario(func(sc *scenarios.Scenario) {
			sc.Load = scenarios.Load{Ops: 1, Concurrency: 1}
			sc.Faults = faults
		})
		h, err := Run(runCtx(t), sc, Options{Target: s.URL, Seed: 1, MaxBody: 1 << 10})
		if err != nil {
			t.Fatal(err)
		}
		return h.Attempts[0]
	}
	clean, dup := run(nil), run(onlyFault("duplicate"))
	if clean.Size != size || clean.Fingerprint == 0 {
		t.Fatalf("clean attempt = size %d fingerprint %v, want %d and a fingerprint", clean.Size, clean.Fingerprint, size)
	}
	if dup.Size != size || dup.Fingerprint != clean.Fingerprint || len(dup.Answers) != 2 {
		t.Fatalf("duplicate attempt = size %d fingerprint %v, %d answers; want %d, %v, 2", dup.Size, dup.Fingerprint, len(dup.Answers), size, clean.Fingerprint)
	}
	for _, o := range dup.Answers {
		if o.Fingerprint != clean.Fingerprint || o.Outcome != history.OK {
			t.Errorf("copy %d = %+v, want fingerprint %v", o.Copy, o, clean.Fingerprint)
		}
	}
}

func TestErrorBodyEvidence(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 2000) // 4000 bytes: cut inside a character
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int64, _ []byte) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "{\"error\":\"bad\x1b[31m\tinput\"}\n"+long)
	})
	sc := scenario(func(sc *scenarios.Scenario) { sc.Load = scenarios.Load{Ops: 1, Concurrency: 1} })
	a := mustRun(t, s, sc, 1).Attempts[0]
	if a.Status != 400 || !strings.HasPrefix(a.Body, "{\"error\":\"bad\uFFFD[31m input\"} é") {
		t.Errorf("error evidence = %.60q, want the body's start, control characters replaced", a.Body)
	}
	if len(a.Body) > maxEvidence || !utf8.ValidString(a.Body) || strings.ContainsFunc(a.Body, unicode.IsControl) {
		t.Errorf("error evidence is %d bytes, valid UTF-8 %v; want at most %d, valid, no control characters", len(a.Body), utf8.ValidString(a.Body), maxEvidence)
	}
	if a.Size != 0 {
		t.Errorf("Size = %d, want 0 for a body under the cap", a.Size)
	}
}

func TestEvidence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{" {\"a\":1}\n", `{"a":1}`},
		{"a\x00b\r\nc", "a\uFFFDb  c"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{strings.Repeat("x", maxEvidence-1) + "é", strings.Repeat("x", maxEvidence-1)},
		{strings.Repeat("x", maxEvidence+10), strings.Repeat("x", maxEvidence)},
	} {
		if got := evidence([]byte(tc.in)); got != tc.want {
			t.Errorf("evidence(%.20q) = %.20q (%d bytes), want %.20q (%d bytes)", tc.in, got, len(got), tc.want, len(tc.want))
		}
	}
}

// hangingServer answers 201 at once, except the requests for which hang
// says so: those never get an answer (until the client goes away).
func hangingServer(t *testing.T, hang func(n int64, r *http.Request) bool) *server {
	return newServer(t, func(w http.ResponseWriter, r *http.Request, n int64, _ []byte) {
		if hang(n, r) {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"ch"}`)
	})
}

func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	s := hangingServer(t, func(n int64, _ *http.Request) bool { return n == 1 })
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 3, Concurrency: 1}
		sc.Retry.Attempts = 1
	})
	// The timeout leaves the attempts that are answered at once time to be,
	// on a loaded machine too.
	const timeout = time.Second
	start := time.Now()
	h, err := Run(runCtx(t), sc, Options{Target: s.URL, Seed: 1, RequestTimeout: timeout})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %v with a %v request timeout", d, timeout)
	}
	if len(h.Attempts) != 3 {
		t.Fatalf("%d attempts, want 3 (the run goes on)", len(h.Attempts))
	}
	a := h.Attempts[0]
	if a.Outcome != history.Info || a.Err != "no answer within 1s (request timeout)" || a.End-a.Start < timeout {
		t.Errorf("attempt over the timeout = %+v, want info, the request timeout's error, >= %v", a, timeout)
	}
	for _, a := range h.Attempts[1:] {
		if a.Status != 201 {
			t.Errorf("attempt %+v, want 201", a)
		}
	}
}

func TestRequestTimeoutUnderFaults(t *testing.T) {
	t.Parallel()
	// Every copy of a duplicate hangs: the attempt and its other copies
	// end at the request timeout.
	s := hangingServer(t, func(int64, *http.Request) bool { return true })
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 1, Concurrency: 1}
		sc.Retry.Attempts = 1
		sc.Faults = onlyFault("duplicate")
	})
	h, err := Run(runCtx(t), sc, Options{Target: s.URL, Seed: 1, RequestTimeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrTarget) {
		t.Fatalf("Run = %v, want ErrTarget (no answer at all)", err)
	}
	a := h.Attempts[0]
	const msg = "no answer within 50ms (request timeout)"
	if a.Outcome != history.Info || a.Err != msg || len(a.Answers) != 2 {
		t.Fatalf("attempt = %+v, want info %q and 2 other copies", a, msg)
	}
	for _, o := range a.Answers {
		if o.Outcome != history.Info || o.Err != msg {
			t.Errorf("copy %d = %+v, want info %q", o.Copy, o, msg)
		}
	}
}

// A delay fault longer than the request timeout is cut by it: the
// request timeout counts from the send, and the fault's wait is part of
// it (the runner's own HTTP/1.1 client, whose connection deadlines cannot
// reach a wait before the write).
func TestRequestTimeoutCutsADelay(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int64, _ []byte) {
		w.WriteHeader(http.StatusCreated)
	})
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 1, Concurrency: 1}
		sc.Retry.Attempts = 1
		sc.Faults = []scenarios.Fault{{Kind: "delay", Rate: 1, Delay: 5 * time.Second}}
	})
	start := time.Now()
	h, _ := Run(runCtx(t), sc, Options{Target: s.URL, Seed: 1, RequestTimeout: 100 * time.Millisecond})
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the run took %v: the 5s delay outlived the 100ms request timeout", took)
	}
	a := h.Attempts[0]
	if a.Outcome == history.OK || !strings.Contains(a.Err, "100ms (request timeout)") || a.End-a.Start > 2*time.Second {
		t.Errorf("attempt = %+v, want one cut by the request timeout after about 100ms", a)
	}
}

func TestRequestTimeoutSetupAndBefore(t *testing.T) {
	t.Parallel()
	s := hangingServer(t, func(_ int64, r *http.Request) bool { return r.Method == http.MethodGet })
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 1, Concurrency: 1}
		sc.Setup = []scenarios.Request{{Method: "GET", Path: "/setup"}}
		sc.Operation.Before = &scenarios.Capture{Request: scenarios.Request{Method: "GET", Path: "/before"}}
	})
	opts := Options{Target: s.URL, Seed: 1, RequestTimeout: 50 * time.Millisecond}
	err := Setup(runCtx(t), sc, opts)
	if !errors.Is(err, ErrTarget) || !strings.Contains(err.Error(), "no answer within 50ms (request timeout)") {
		t.Errorf("Setup over a silent target = %v, want ErrTarget naming the request timeout", err)
	}
	h, _ := Run(runCtx(t), sc, opts)
	if a := h.Attempts[0]; a.Outcome != history.Fail || !strings.Contains(a.Err, "operation.before: GET /before: no answer within 50ms (request timeout)") {
		t.Errorf("attempt after a silent before read = %+v, want fail naming the request timeout", a)
	}
	if _, err := Run(runCtx(t), sc, Options{Target: s.URL, RequestTimeout: -time.Second}); err == nil {
		t.Error("Run with a negative request timeout = nil error, want one")
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int64, _ []byte) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "120") // capped by the backoff's max
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 1, Concurrency: 1}
		sc.Retry.Backoff.Max = scenarios.Duration(150 * time.Millisecond)
	})
	h := mustRun(t, s, sc, 1)
	if len(h.Attempts) != 2 {
		t.Fatalf("%d attempts, want 503 then 201", len(h.Attempts))
	}
	gap := h.Attempts[1].Start - h.Attempts[0].End
	if gap < 150*time.Millisecond || gap > 5*time.Second {
		t.Errorf("retry waited %v after Retry-After: 120, want the backoff max 150ms", gap)
	}
}

func TestRetryAfterParse(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	date := now.Add(-time.Hour) // the server's clock is an hour behind
	for _, tc := range []struct {
		header http.Header
		want   time.Duration
	}{
		{http.Header{}, 0},
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {" 0 "}}, 0},
		{http.Header{"Retry-After": {"-5"}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {now.Add(7 * time.Second).Format(http.TimeFormat)}}, 7 * time.Second},
		{http.Header{"Retry-After": {now.Add(-7 * time.Second).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After": {date.Add(4 * time.Second).Format(http.TimeFormat)}, "Date": {date.Format(http.TimeFormat)}}, 4 * time.Second},
	} {
		if got := retryAfter(tc.header, now); got != tc.want {
			t.Errorf("retryAfter(%v) = %v, want %v", tc.header, got, tc.want)
		}
	}
	b := backoff{initial: 10 * time.Millisecond, max: time.Second, multiplier: 1}
	for _, tc := range []struct{ ra, want time.Duration }{
		{0, 10 * time.Millisecond},
		{time.Millisecond, 10 * time.Millisecond}, // never shorter than the backoff
		{300 * time.Millisecond, 300 * time.Millisecond},
		{time.Hour, time.Second}, // capped by the max
	} {
		if got := b.retryWait(0, 1, tc.ra); got != tc.want {
			t.Errorf("retryWait(Retry-After %v) = %v, want %v", tc.ra, got, tc.want)
		}
	}
	if got := (backoff{}).retryWait(0, 1, time.Hour); got != maxRetryAfter {
		t.Errorf("retryWait without a max = %v, want %v", got, maxRetryAfter)
	}
}

func TestTargets(t *testing.T) {
	t.Parallel()
	answer := func(w http.ResponseWriter, r *http.Request, n int64, _ []byte) {
		if n%3 == 1 { // some retries, so attempts of one op spread
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}
	a, b := newServer(t, answer), newServer(t, answer)
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 40, Concurrency: 4}
		sc.Faults = onlyFault("duplicate", 2)
	})
	secret, _ := url.Parse(b.URL.String())
	secret.User = url.UserPassword("u", "hunter2")
	run := func() *history.History {
		h, err := Run(runCtx(t), sc, Options{Targets: []*url.URL{a.URL, secret}, Target: b.URL, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	h := run()
	if h.Meta.Target != a.URL.String() || len(h.Meta.Targets) != 2 || h.Meta.Targets[1] != secret.Redacted() {
		t.Errorf("Meta.Target %q, Targets %q; want %q and both, redacted", h.Meta.Target, h.Meta.Targets, a.URL)
	}
	// Each attempt's key reached the server it names, as many times as
	// it had copies.
	count := []map[string]int{a.perKey(), b.perKey()}
	want := []map[string]int{{}, {}}
	moved := false
	for _, op := range h.Ops {
		as := h.AttemptsOf(op.ID)
		for _, at := range as {
			want[at.Target][op.Key] += max(at.Copies, 1)
			if at.Target != as[0].Target {
				moved = true
			}
		}
	}
	for i := range want {
		if len(want[i]) == 0 {
			t.Errorf("target %d got no attempt", i)
		}
		for k, n := range want[i] {
			if count[i][k] != n {
				t.Errorf("target %d got key %s %d times, want %d", i, k, count[i][k], n)
			}
		}
	}
	if !moved {
		t.Error("no op had attempts on two targets, want retries spread over the replicas")
	}
	// The same seed sends each attempt to the same target.
	targetsOf := func(h *history.History) []int {
		var l []int
		for _, at := range h.Attempts {
			l = append(l, at.Op*100+at.N*10+at.Target)
		}
		return l
	}
	first, again := targetsOf(h), targetsOf(run())
	for i := range min(len(first), len(again)) {
		if first[i]%10 != again[i]%10 && first[i]/10 == again[i]/10 {
			t.Fatalf("attempt %d went to target %d, then %d with the same seed", first[i]/10, first[i]%10, again[i]%10)
		}
	}
}
