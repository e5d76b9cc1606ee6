package audit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/jsonobj"
	"github.com/idemcheck/idemcheck/lab"
	"github.com/idemcheck/idemcheck/runner"
	"github.com/idemcheck/idemcheck/scenarios"
)

func TestBodyForms(t *testing.T) {
	body := []byte(`{"amount":100, "currency":"usd","meta":{"b":1,"a":[1,2]}}`)
	ms, ok := jsonobj.Members(body)
	if !ok || len(ms) != 3 || ms[0].Name != "amount" || ms[2].Name != "meta" {
		t.Fatalf("members(%s) = %v, %v", body, ms, ok)
	}
	re, sp := equivalents(body)
	if got, want := string(re), `{"meta":{"b":1,"a":[1,2]},"currency":"usd","amount":100}`; got != want {
		t.Errorf("reordered = %s, want %s", got, want)
	}
	if !strings.Contains(string(sp), "\n  \"amount\": 100") || bytes.Equal(sp, body) {
		t.Errorf("respaced = %q", sp)
	}
	if m, ok := mutate(body, "", 2); !ok || string(m) != `{"amount":102,"currency":"usd","meta":{"b":1,"a":[1,2]}}` {
		t.Errorf("mutate = %s, %v", m, ok)
	}
	if m, _ := mutate([]byte(`{"op_id":"k","sku":"A1"}`), "op_id", 1); string(m) != `{"op_id":"k","sku":"A1-1"}` {
		t.Errorf("mutate skips the key field: %s", m)
	}
	if m, _ := mutate([]byte(`{"ok":true}`), "", 1); string(m) != `{"ok":true,"idemcheck_probe":1}` {
		t.Errorf("mutate adds a member: %s", m)
	}
	if _, ok := mutate([]byte(`[1]`), "", 1); ok {
		t.Error("mutate of an array: ok")
	}
	if b, err := setField([]byte(`{"a":1}`), "op_id", "k1"); err != nil || string(b) != `{"a":1,"op_id":"k1"}` {
		t.Errorf("setField = %s, %v", b, err)
	}
	if b, err := setField(nil, "op_id", "k1"); err != nil || string(b) != `{"op_id":"k1"}` {
		t.Errorf("setField(nil) = %s, %v", b, err)
	}
	if _, err := setField([]byte(`[]`), "op_id", "k1"); err == nil {
		t.Error("setField on an array: nil error")
	}
	if r, s := equivalents([]byte(`{}`)); r != nil || s == nil {
		t.Errorf("equivalents({}) = %s, %s", r, s)
	}
}

func TestPaths(t *testing.T) {
	for in, want := range map[string]string{"/v1/charges": "/v1/idemcheck-sibling", "/charges?x=1": "/idemcheck-sibling", "/": "/idemcheck-sibling", "/v1/charges/": "/v1/idemcheck-sibling"} {
		if got := siblingPath(in); got != want {
			t.Errorf("siblingPath(%q) = %q, want %q", in, got, want)
		}
	}
	if withQuery("/c") != "/c?idemcheck=1" || withQuery("/c?a=1") != "/c?a=1&idemcheck=1" {
		t.Error("withQuery")
	}
}

// labScenario is the lab's charge endpoint as a scenario, with an oracle.
func labScenario(t *testing.T, oracle bool) *scenarios.Scenario {
	t.Helper()
	y := `name: audit
load: {ops: 1, concurrency: 1}
invariants: [{check: same_response}]
operation:
  path: /charges
  key: {header: Idempotency-Key}
  headers: {Authorization: "Bearer alice"}
  body: '{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}'
`
	if oracle {
		y += `oracles:
  - name: ledger
    effects:
      per_key: {path: "/charges?idempotency_key={{.Key}}", value: $.count}
`
	}
	sc, err := scenarios.Parse("test", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func startLab(t *testing.T, bugs ...string) *url.URL {
	t.Helper()
	s, err := lab.NewMemory(lab.Config{ProcessorLatency: 20 * time.Millisecond, Bugs: bugs})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u
}

// TestRun runs a few checks on the lab, correct and with a bug, through
// the library: keys are UUIDs from the given source, the request cap
// holds, the evidence names keys and effects.
func TestRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bug  string
		fail []string
	}{{"", nil}, {"check-then-act", []string{"C06"}}} {
		var bugs []string
		if tc.bug != "" {
			bugs = []string{tc.bug}
		}
		a, err := New(Config{Scenario: labScenario(t, true), Targets: []*url.URL{startLab(t, bugs...)}, Checks: []string{"C03", "C06"},
			Quiet: 10 * time.Millisecond, Rand: rand.New(rand.NewPCG(1, 2))})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := a.MaxPlanned(), CalibrationRequests+4+checks.RaceMaxRounds*checks.RaceCopies; got != want {
			t.Errorf("MaxPlanned = %d, want %d", got, want)
		}
		res, err := a.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		sc := res.Scorecard
		var failed []string
		for _, c := range sc.Checks {
			if c.Result == checks.Fail {
				failed = append(failed, c.ID)
			}
			if (c.ID == "C03" || c.ID == "C06") && c.Result != checks.Skipped && c.JudgedBy != checks.ByEffects {
				t.Errorf("%s judged by %q, want effects", c.ID, c.JudgedBy)
			}
		}
		if !cmp.Equal(failed, tc.fail) {
			t.Errorf("bug %q: failed %v, want %v\n%+v", tc.bug, failed, tc.fail, sc.Checks)
		}
		if sc.Requests > a.MaxPlanned() {
			t.Errorf("sent %d requests, planned at most %d", sc.Requests, a.MaxPlanned())
		}
		ev := sc.Checks[5].Evidence // C06
		if len(ev) == 0 || len(ev[0].Key) != 36 || ev[0].Headers["Authorization"] != "xxxxx" {
			t.Errorf("C06 evidence = %+v; want a UUID key and the credential masked", ev)
		}
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	u := startLab(t)
	if _, err := New(Config{Scenario: labScenario(t, false), Targets: []*url.URL{u}, Volatile: []string{"$["}}); !errors.Is(err, ErrConfig) {
		t.Errorf("bad volatile path: %v, want ErrConfig", err)
	}
	if _, err := New(Config{Scenario: labScenario(t, false), Targets: []*url.URL{u}, Errors: "sometimes"}); !errors.Is(err, ErrConfig) {
		t.Errorf("bad policy: %v, want ErrConfig", err)
	}
	down, _ := url.Parse("http://127.0.0.1:1")
	a, err := New(Config{Scenario: labScenario(t, false), Targets: []*url.URL{down}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background()); !errors.Is(err, ErrTarget) {
		t.Errorf("unreachable target: %v, want ErrTarget", err)
	}
	// An oracle that counts something else is refused before any check
	// runs.
	sc := labScenario(t, true)
	sc.Oracles[0].Effects.PerKey.Value = "$.charges[0].amount"
	a, err = New(Config{Scenario: sc, Targets: []*url.URL{u}, Quiet: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background()); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "counts 100 effects") {
		t.Errorf("an oracle counting amounts: %v, want ErrConfig", err)
	}
	// A cap too small for the calibration and a check: the check is skipped.
	res := runAudit(t, Config{Scenario: labScenario(t, false), Targets: []*url.URL{u}, Checks: []string{"C06"}, MaxRequests: 20})
	card := res.Scorecard
	if c := card.Checks[5]; c.Result != checks.Skipped || !strings.Contains(c.Summary, "--max-requests 20") || card.Requests != CalibrationRequests || card.Result != checks.Inconclusive {
		t.Errorf("C06 under a cap of 20: %s %q, %d requests, %s", c.Result, c.Summary, card.Requests, card.Result)
	}
}

// TestNoHiddenResend: a server that reads a request on a kept-alive
// connection and closes it without answering. The audit records that
// exchange as indeterminate, and the server sees its key once: the
// client under the audit never sends a request again on its own (net/http
// resends a POST with an Idempotency-Key on a reused connection that
// broke, an exchange the history would never show).
func TestNoHiddenResend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		transport func() http.RoundTripper
	}{
		{"the runner's HTTP/1.1 client", func() http.RoundTripper { return nil }},
		{"net/http", func() http.RoundTripper { return runner.NewTransport(4) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newDropThird(t)
			u, _ := url.Parse("http://" + srv.addr)
			sc := labScenario(t, false)
			res := runAudit(t, Config{Scenario: sc, Targets: []*url.URL{u}, Checks: []string{"C03"}, Transport: tc.transport(),
				Rand: rand.New(rand.NewPCG(3, 4))})
			var lost *history.Attempt
			for i := range res.History.Attempts {
				if at := &res.History.Attempts[i]; at.Request != nil && at.Request.Key == srv.droppedKey() {
					if lost != nil {
						t.Fatalf("the dropped request was recorded twice: %+v and %+v", *lost, *at)
					}
					lost = at
				}
			}
			if lost == nil {
				t.Fatalf("no attempt recorded for the request the server dropped (key %q)", srv.droppedKey())
			}
			if lost.Outcome != history.Info {
				t.Errorf("the dropped request was recorded as %s (status %d), want info: no answer came", lost.Outcome, lost.Status)
			}
			if n := srv.seen(srv.droppedKey()); n != 1 {
				t.Errorf("the server saw the dropped request's key %d times, want 1: a hidden resend", n)
			}
			if c := res.Scorecard.Checks[2]; c.ID != "C03" || c.Result == checks.Fail {
				t.Errorf("C03 = %s %q; an unanswered request accuses nothing", c.Result, c.Summary)
			}
		})
	}
}

// dropThird is a raw HTTP/1.1 server that answers every request 201 with
// its key's id on kept-alive connections, except the third, which it reads
// whole and then closes the connection on without a byte of answer.
type dropThird struct {
	addr  string
	mu    sync.Mutex
	n     int
	keys  map[string]int
	third string
}

func newDropThird(t *testing.T) *dropThird {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s := &dropThird{addr: l.Addr().String(), keys: map[string]int{}}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *dropThird) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		key := req.Header.Get("Idempotency-Key")
		s.mu.Lock()
		s.n++
		n := s.n
		s.keys[key]++
		if n == 3 {
			s.third = key
		}
		s.mu.Unlock()
		if n == 3 {
			return // read, then closed without answering
		}
		body := fmt.Sprintf(`{"id":%q}`, "ch_"+key) // the same answer for the same key
		fmt.Fprintf(c, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
}

func (s *dropThird) droppedKey() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.third
}

func (s *dropThird) seen(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[key]
}

// runAudit makes an Auditor of cfg and runs it; an error of either fails
// the test.
func runAudit(t *testing.T, cfg Config) *Result {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}
