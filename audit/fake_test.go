package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/scenarios"
)

// fakeAPI is a small idempotent charge endpoint with switchable bugs, for
// the probes the lab has no bug for yet (retention by count, a shared
// record, keyless requests sharing one, keys cut short, a burnt key, a
// mismatch that overwrites the stored answer, expiry that races, a
// cross-user replay wrapped in another shape, keys the server mints). Its
// effects are read at GET /effects?key=K ({"count": n}).
type fakeAPI struct {
	keepLast int           // keep only the last keepLast keys (0: all)
	truncate int           // compare keys on their first truncate characters (0: whole)
	ttl      time.Duration // keys expire after ttl (0: never)
	bugs     map[string]bool

	mu      sync.Mutex
	records map[string]*fakeRecord
	order   []string
	charges map[string]int
	n       int
	// attempts are the X-Attempt headers seen, by key ("" for none).
	attempts map[string][]string
}

type fakeRecord struct {
	pending bool
	status  int
	body    []byte
	request string // the canonical request body
	created time.Time
	burnt   bool
}

func newFake(t *testing.T, bugs ...string) (*fakeAPI, *url.URL) {
	f := &fakeAPI{bugs: map[string]bool{}, records: map[string]*fakeRecord{}, charges: map[string]int{}, attempts: map[string][]string{}}
	for _, b := range bugs {
		f.bugs[b] = true
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return f, u
}

func canonical(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	c, _ := json.Marshal(v)
	return string(c)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/effects" {
		f.mu.Lock()
		n := f.charges[r.URL.Query().Get("key")]
		f.mu.Unlock()
		fmt.Fprintf(w, `{"count":%d}`, n)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/charges" {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get("Idempotency-Key")
	f.mu.Lock()
	f.attempts[key] = append(f.attempts[key], r.Header.Get("X-Attempt"))
	f.mu.Unlock()
	user := r.Header.Get("Authorization")
	if f.bugs["mint"] || f.bugs["mint-ignores"] {
		if key == "" || f.bugs["mint-ignores"] {
			f.mu.Lock()
			f.n++
			key = fmt.Sprintf("minted-%d", f.n)
			f.mu.Unlock()
		}
		w.Header().Set("Idempotency-Key", key)
	}
	scope := user + "|" + key
	switch {
	case key == "" && f.bugs["keyless-shared"]:
		scope = "keyless" // one record for every keyless request, every user
	case key == "":
		http.Error(w, `{"error":"Idempotency-Key required"}`, http.StatusBadRequest)
		return
	case f.bugs["wrapped-global"]:
		scope = key
	}
	if f.truncate > 0 && len(scope) > len(user)+1+f.truncate {
		scope = scope[:len(user)+1+f.truncate]
	}
	req := canonical(body)
	f.mu.Lock()
	rec := f.records[scope]
	if rec != nil && f.ttl > 0 && !rec.pending && !rec.burnt && time.Since(rec.created) > f.ttl {
		delete(f.records, scope)
		rec = nil
		if f.bugs["expiry-race"] {
			// The expired record is dropped, then the key is claimed
			// after a window: concurrent requests all claim it.
			f.mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			f.mu.Lock()
		}
	}
	switch {
	case rec == nil:
	case rec.pending && f.bugs["lock-wait"]:
		// Waits for the first request, then replays its answer: correct,
		// but a copy in flight is served just after the winner.
		for rec != nil && rec.pending {
			f.mu.Unlock()
			time.Sleep(time.Millisecond)
			f.mu.Lock()
			rec = f.records[scope]
		}
		if rec == nil {
			f.mu.Unlock()
			http.Error(w, `{"error":"gone"}`, http.StatusConflict)
			return
		}
		st, b := rec.status, rec.body
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st)
		w.Write(b)
		return
	case rec.pending:
		f.mu.Unlock()
		http.Error(w, `{"error":"in progress"}`, http.StatusConflict)
		return
	case rec.burnt:
		f.mu.Unlock()
		http.Error(w, `{"error":"this key failed before and cannot be used again"}`, http.StatusPreconditionFailed)
		return
	case scope == "keyless" || (f.bugs["wrapped-global"] && !strings.HasPrefix(string(rec.body), "{\"cached\"") && rec.request == req):
		st, b := rec.status, rec.body
		f.mu.Unlock()
		if f.bugs["wrapped-global"] {
			st, b = http.StatusOK, []byte(`{"cached":true,"data":`+string(b)+`}`)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st)
		w.Write(b)
		return
	case rec.request != req:
		if f.bugs["mismatch-overwrites"] {
			rec.status, rec.body = http.StatusUnprocessableEntity, []byte(`{"error":"another request under this key"}`)
		}
		f.mu.Unlock()
		http.Error(w, `{"error":"another request under this key"}`, http.StatusUnprocessableEntity)
		return
	default:
		st, b := rec.status, rec.body
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st)
		w.Write(b)
		return
	}
	// A shared record: the store is read whole here and written whole
	// below, so keys stored meanwhile are lost.
	var snapshot map[string]*fakeRecord
	if f.bugs["shared-record"] {
		snapshot = maps.Clone(f.records)
	}
	f.records[scope] = &fakeRecord{pending: true}
	f.mu.Unlock()

	time.Sleep(5 * time.Millisecond)
	f.mu.Lock()
	defer f.mu.Unlock()
	if bytes.Contains(body, []byte("cus_fail")) {
		if f.bugs["burnt-key"] {
			f.records[scope] = &fakeRecord{burnt: true}
		} else {
			delete(f.records, scope)
		}
		http.Error(w, `{"error":"card_declined"}`, http.StatusPaymentRequired)
		return
	}
	f.n++
	f.charges[key]++
	out := fmt.Appendf(nil, `{"id":"ch_%d","amount":100}`, f.n)
	done := &fakeRecord{status: http.StatusCreated, body: out, request: req, created: time.Now()}
	if snapshot != nil {
		for k, v := range snapshot {
			if v.pending && k != scope {
				delete(snapshot, k) // another key's claim, lost
			}
		}
		snapshot[scope] = done
		f.records = snapshot
	} else {
		f.records[scope] = done
	}
	f.order = append(f.order, scope)
	if f.keepLast > 0 && len(f.order) > f.keepLast {
		delete(f.records, f.order[0])
		f.order = f.order[1:]
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	w.Write(out)
}

// fakeScenario is the fake's charge endpoint, with its oracle.
func fakeScenario(t *testing.T) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Parse("test", []byte(`name: audit
load: {ops: 1, concurrency: 1}
invariants: [{check: same_response}]
operation:
  path: /charges
  key: {header: Idempotency-Key}
  headers: {Authorization: "Bearer alice", X-Attempt: "{{.Attempt}}"}
  body: '{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}'
oracles:
  - name: ledger
    effects:
      per_key: {path: "/effects?key={{.Key}}", value: $.count}
`))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// auditFake audits the fake with the checks given; cfg's Scenario,
// Targets, Checks, Quiet and Rand are set here.
func auditFake(t *testing.T, u *url.URL, ids []string, cfg Config) *checks.Scorecard {
	t.Helper()
	cfg.Scenario, cfg.Targets, cfg.Checks = fakeScenario(t), []*url.URL{u}, ids
	cfg.Quiet, cfg.Rand = time.Millisecond, rand.New(rand.NewPCG(7, 8))
	if cfg.As == nil {
		cfg.As = map[string]string{"Authorization": "Bearer bob"}
	}
	cfg.ErrorBody = `{"amount":100,"currency":"usd","customer":"cus_fail"}`
	cfg.Lease = time.Second
	res := runAudit(t, cfg)
	return res.Scorecard
}

// wantChecks asserts the result of each check in want; every other
// selected check must pass.
func wantChecks(t *testing.T, name string, sc *checks.Scorecard, ids []string, want map[string]checks.Severity) {
	t.Helper()
	for _, c := range sc.Checks {
		if !slices.Contains(ids, c.ID) {
			continue
		}
		sev, fails := want[c.ID]
		switch {
		case fails && (c.Result != checks.Fail || c.Severity != sev):
			t.Errorf("%s: %s = %s %s (%s), want a %s failure", name, c.ID, c.Result, c.Severity, c.Summary, sev)
		case !fails && c.Result != checks.Pass:
			t.Errorf("%s: %s = %s %s (%s), want pass", name, c.ID, c.Result, c.Severity, c.Summary)
		}
	}
}

// TestProbesOnFake: the new probes and the fixed verdicts, end to end on
// a correct fake API and on one broken each way.
func TestProbesOnFake(t *testing.T) {
	t.Parallel()
	all := []string{"C03", "C04", "C06", "C07", "C12", "C14", "C15", "C24", "C25", "C26", "C27"}
	cfg := func() Config {
		return Config{Retention: 300 * time.Millisecond, RetentionKeys: 24, Errors: ErrorsReExecuted}
	}
	f, u := newFake(t)
	f.ttl = 300 * time.Millisecond
	wantChecks(t, "correct", auditFake(t, u, all, cfg()), all, nil)

	for _, tc := range []struct {
		name  string
		setup func(f *fakeAPI)
		check string
		sev   checks.Severity
		says  string
	}{
		{"retention by count", func(f *fakeAPI) { f.keepLast = 12 }, "C24", checks.Critical, "by count, not for a time"},
		{"shared record", func(f *fakeAPI) { f.bugs["shared-record"] = true }, "C25", checks.Critical, "effects"},
		{"keyless shared", func(f *fakeAPI) { f.bugs["keyless-shared"] = true }, "C26", checks.Critical, "served the first customer's answer"},
		{"keys cut to 32 characters", func(f *fakeAPI) { f.truncate = 32 }, "C27", checks.High, "first 32 characters"},
		{"burnt key", func(f *fakeAPI) { f.bugs["burnt-key"] = true }, "C12", checks.High, "the key is burnt"},
		{"a mismatch overwrites the answer", func(f *fakeAPI) { f.bugs["mismatch-overwrites"] = true }, "C04", checks.High, "replaced the stored answer"},
		{"expiry races", func(f *fakeAPI) { f.bugs["expiry-race"] = true }, "C14", checks.Critical, "concurrent requests executed"},
		{"a wrapped cross-user replay", func(f *fakeAPI) { f.bugs["wrapped-global"] = true }, "C15", checks.Critical, "data leak"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, u := newFake(t)
			tc.setup(f)
			f.ttl = 300 * time.Millisecond
			sc := auditFake(t, u, []string{tc.check}, cfg())
			c := sc.Checks[slices.IndexFunc(sc.Checks, func(c checks.ContractCheck) bool { return c.ID == tc.check })]
			if c.Result != checks.Fail || c.Severity != tc.sev || !strings.Contains(c.Summary, tc.says) {
				t.Errorf("%s: %s = %s %s (%s), want a %s failure saying %q", tc.name, tc.check, c.Result, c.Severity, c.Summary, tc.sev, tc.says)
			}
		})
	}
}

// TestC15WrappedWithoutOracle: without an oracle, a replay of the first
// principal's charge wrapped in another shape is still a leak.
func TestC15WrappedWithoutOracle(t *testing.T) {
	t.Parallel()
	f, u := newFake(t)
	f.bugs["wrapped-global"] = true
	sc := fakeScenario(t)
	sc.Oracles = nil
	res := runAudit(t, Config{Scenario: sc, Targets: []*url.URL{u}, Checks: []string{"C15"}, As: map[string]string{"Authorization": "Bearer bob"}, Rand: rand.New(rand.NewPCG(1, 1))})
	if c := res.Scorecard.Checks[14]; c.ID != "C15" || c.Result != checks.Fail || c.Severity != checks.Critical || c.JudgedBy != checks.ByAnswers {
		t.Errorf("C15 on a wrapped replay without an oracle = %s %s by %s (%s), want a critical failure from the answers", c.Result, c.Severity, c.JudgedBy, c.Summary)
	}
}

// TestKeyFromAnswer: an API that mints keys passes with --key-from-answer
// (each op's first request carries no key, its later ones the minted
// key); one that mints a new key on every request charges every retry; an
// answer without the key refuses the audit before any check.
func TestKeyFromAnswer(t *testing.T) {
	t.Parallel()
	ids := []string{"C01", "C02", "C03", "C04", "C06", "C09", "C15", "C17", "DK", "C24", "C25", "C26"}
	f, u := newFake(t, "mint")
	sc := auditFake(t, u, ids, Config{KeyFromAnswer: "idempotency-key", RetentionKeys: 8})
	for _, c := range sc.Checks {
		switch {
		case !slices.Contains(ids, c.ID):
		case mintChecks[c.ID] != "":
			if c.Result != checks.Skipped || !strings.Contains(c.Summary, "--key-from-answer") {
				t.Errorf("%s with minted keys = %s (%s), want skipped", c.ID, c.Result, c.Summary)
			}
		case c.ID == "C26":
			// The fake processes keyless requests, each its own.
			if c.Result != checks.Pass {
				t.Errorf("C26 = %s (%s)", c.Result, c.Summary)
			}
		case c.Result != checks.Pass || (c.JudgedBy != checks.ByEffects && c.ID != "C17"):
			t.Errorf("%s with minted keys = %s by %s (%s), want a pass by the effects", c.ID, c.Result, c.JudgedBy, c.Summary)
		}
	}
	f.mu.Lock()
	if n := len(f.attempts[""]); n == 0 {
		t.Error("no request went without a key: the first requests must carry none")
	}
	f.mu.Unlock()

	_, u = newFake(t, "mint-ignores")
	sc = auditFake(t, u, []string{"C03"}, Config{KeyFromAnswer: "Idempotency-Key"})
	if c := sc.Checks[2]; c.Result != checks.Fail || c.Severity != checks.Critical {
		t.Errorf("a key minted anew on every request: C03 = %s %s (%s), want critical", c.Result, c.Severity, c.Summary)
	} else if !strings.Contains(c.Summary, "2 effects") {
		t.Errorf("C03 does not count the effects under both minted keys: %s", c.Summary)
	}

	_, u = newFake(t)
	a, err := New(Config{Scenario: fakeScenario(t), Targets: []*url.URL{u}, KeyFromAnswer: "Idempotency-Key"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "--key-from-answer") {
		t.Errorf("an API that mints no key: %v, want an error naming --key-from-answer", err)
	}
	for _, bad := range []string{"X-Request-Id", "$["} {
		if _, err := New(Config{Scenario: fakeScenario(t), Targets: []*url.URL{u}, KeyFromAnswer: bad}); err == nil {
			t.Errorf("--key-from-answer %q: no error", bad)
		}
	}
}

// TestAttemptTemplates: -H templates render with the attempt's number in
// the probes, and with attempt 0 in the calibration.
func TestAttemptTemplates(t *testing.T) {
	t.Parallel()
	f, u := newFake(t)
	res := runAudit(t, Config{Scenario: fakeScenario(t), Targets: []*url.URL{u}, Checks: []string{"C03"}, Quiet: time.Millisecond, Rand: rand.New(rand.NewPCG(5, 6))})
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, op := range res.History.Ops {
		got := strings.Join(f.attempts[op.Key], ",")
		want := "1,2"
		if op.Check == "calibration" {
			want = "0"
		}
		if got != want {
			t.Errorf("%s op %s: X-Attempt %q, want %q", op.Check, op.Key, got, want)
		}
	}
}

// TestC06Adaptive: C06 runs its base rounds on an API that refuses copies
// in flight (a round may earn another on a loaded machine), and its bound
// on one that serves them the winner's answer just after it (each round
// near a race); the summary says so, with how close the copies, held to
// their last byte, arrived.
func TestC06Adaptive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bug      string
		min, max int
		says     string
	}{{"", checks.RaceRounds, checks.RaceMaxRounds, "held to its last byte"}, {"lock-wait", checks.RaceMaxRounds, checks.RaceMaxRounds, "were inconclusive or near a race"}} {
		f, u := newFake(t)
		f.bugs[tc.bug] = true
		sc := auditFake(t, u, []string{"C06"}, Config{})
		c := sc.Checks[5]
		var rounds int
		fmt.Sscanf(c.Summary, "%d rounds of", &rounds)
		if c.Result != checks.Pass || rounds < tc.min || rounds > tc.max || !strings.Contains(c.Summary, tc.says) {
			t.Errorf("C06 on the fake %q = %s (%s), want a pass after %d to %d rounds saying %q", tc.bug, c.Result, c.Summary, tc.min, tc.max, tc.says)
		}
	}
}

// TestC24PastRetentionNotAccused: a correct API whose keys expire by time
// (a short declared --retention, as a slow machine makes of any) forgets
// a key the flood outlived; C24 does not call that a retention by count.
func TestC24PastRetentionNotAccused(t *testing.T) {
	t.Parallel()
	f, u := newFake(t)
	f.ttl = time.Millisecond
	sc := auditFake(t, u, []string{"C24"}, Config{Retention: time.Millisecond, RetentionKeys: 24, Errors: ErrorsReExecuted})
	c := sc.Checks[slices.IndexFunc(sc.Checks, func(c checks.ContractCheck) bool { return c.ID == "C24" })]
	if c.Result == checks.Fail || !strings.Contains(c.Summary, "past the declared retention") {
		t.Errorf("C24 on keys expired by time = %s (%s), want no accusation, the retries named past the retention", c.Result, c.Summary)
	}
}
