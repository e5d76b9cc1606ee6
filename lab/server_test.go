package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const body1 = `{"amount":100,"currency":"usd","customer":"cus_1"}`

// total is the number of real charges p made.
func (p *Processor) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.charges)
}

// testLab is a lab on memory backends with a fake clock.
type testLab struct {
	*Server
	ledger *MemoryLedger
	cache  *MemoryCache
	clock  *fakeClock
}

func newTestLab(t *testing.T, cfg Config) *testLab {
	t.Helper()
	clk := newFakeClock()
	cfg.Clock = clk.Now
	if cfg.ProcessorLatency == 0 {
		cfg.ProcessorLatency = -1 // none
	}
	l := NewMemoryLedger()
	c := NewMemoryCache(clk.Now)
	s, err := New(cfg, l, c)
	if err != nil {
		t.Fatalf("New(%+v) = %v", cfg, err)
	}
	return &testLab{Server: s, ledger: l, cache: c, clock: clk}
}

// req is one request to the lab.
type req struct {
	method, path, user, key, body string
	noKey                         bool
	noCache                       bool // sends Cache-Control: no-cache
	optional                      bool // sends Idempotency-Optional: true
}

func (tl *testLab) do(t *testing.T, r req) *httptest.ResponseRecorder {
	t.Helper()
	return serve(tl.Server, r, context.Background())
}

func serve(h http.Handler, r req, ctx context.Context) *httptest.ResponseRecorder {
	hr := httptest.NewRequestWithContext(ctx, r.method, r.path, strings.NewReader(r.body))
	if r.user != "" {
		hr.Header.Set("Authorization", "Bearer "+r.user)
	}
	if !r.noKey {
		hr.Header.Set("Idempotency-Key", r.key)
	}
	if r.body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.noCache {
		hr.Header.Set("Cache-Control", "no-cache")
	}
	if r.optional {
		hr.Header.Set(OptionalKeyHeader, "true")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, hr)
	return w
}

func charge(user, key, body string) req {
	return req{method: "POST", path: "/charges", user: user, key: key, body: body}
}

func decodeJSON(t *testing.T, w *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatalf("decode %q: %v", w.Body.String(), err)
	}
	return m
}

func (tl *testLab) ledgerCount(t *testing.T, key string) int {
	t.Helper()
	rows, err := tl.ledger.ChargesByKey(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

func wantStatus(t *testing.T, name string, w *httptest.ResponseRecorder, want int) {
	t.Helper()
	if w.Code != want {
		t.Fatalf("%s status = %d, want %d (body %s)", name, w.Code, want, w.Body.String())
	}
}

func wantProblem(t *testing.T, name string, w *httptest.ResponseRecorder, want int) map[string]any {
	t.Helper()
	wantStatus(t, name, w, want)
	if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s Content-Type = %q, want application/problem+json", name, ct)
	}
	p := decodeJSON(t, w)
	if p["type"] != "about:blank" || p["status"] != float64(want) || p["title"] == "" {
		t.Errorf("%s problem = %v, want type about:blank, status %d, a title", name, p, want)
	}
	return p
}

func TestChargeCreate(t *testing.T) {
	tl := newTestLab(t, Config{})
	w := tl.do(t, charge("alice", "k1", body1))
	wantStatus(t, "POST /charges", w, http.StatusCreated)
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	if h := w.Header().Get("Idempotent-Replayed"); h != "" {
		t.Errorf("first answer Idempotent-Replayed = %q, want none", h)
	}
	want := map[string]any{
		"id": "ch_1", "amount": float64(100), "currency": "usd", "customer": "cus_1",
		"status": "succeeded", "created": "2025-06-01T12:00:00Z",
	}
	if diff := cmp.Diff(want, decodeJSON(t, w)); diff != "" {
		t.Errorf("POST /charges body (-want +got):\n%s", diff)
	}
	if n := tl.ledgerCount(t, "k1"); n != 1 {
		t.Errorf("ledger rows for k1 = %d, want 1", n)
	}
	if n := tl.Processor().total(); n != 1 {
		t.Errorf("processor charges = %d, want 1", n)
	}
	if got := tl.Processor().Charges("k1"); len(got) != 1 || got[0].DedupKey != "alice:k1" {
		t.Errorf("processor charges for k1 = %+v, want one with dedup key alice:k1", got)
	}
}

func TestChargeKeyValidation(t *testing.T) {
	tests := []struct {
		name    string
		headers []string // Idempotency-Key values; nil = none
	}{
		{"missing", nil},
		{"empty", []string{""}},
		{"empty quoted", []string{`""`}},
		{"too long", []string{strings.Repeat("k", 256)}},
		{"control char", []string{"a\tb"}},
		{"two headers", []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newTestLab(t, Config{})
			r := httptest.NewRequest("POST", "/charges", strings.NewReader(body1))
			for _, v := range tt.headers {
				r.Header.Add("Idempotency-Key", v)
			}
			w := httptest.NewRecorder()
			tl.ServeHTTP(w, r)
			wantProblem(t, "POST /charges", w, http.StatusBadRequest)
			if n := tl.Processor().total(); n != 0 {
				t.Errorf("processor charges = %d, want 0", n)
			}
		})
	}
	t.Run("255 chars ok", func(t *testing.T) {
		tl := newTestLab(t, Config{})
		wantStatus(t, "POST /charges", tl.do(t, charge("a", strings.Repeat("k", 255), body1)), http.StatusCreated)
	})
	t.Run("quoted equals raw", func(t *testing.T) {
		tl := newTestLab(t, Config{})
		first := tl.do(t, charge("a", "k1", body1))
		second := tl.do(t, charge("a", `"k1"`, body1))
		wantStatus(t, "quoted replay", second, http.StatusCreated)
		if second.Header().Get("Idempotent-Replayed") != "true" || second.Body.String() != first.Body.String() {
			t.Errorf("quoted key: replayed %q body %s, want the raw key's answer %s",
				second.Header().Get("Idempotent-Replayed"), second.Body, first.Body)
		}
	})
}

func TestChargeBodyValidation(t *testing.T) {
	bodies := []string{
		``,
		`[]`,
		`{"amount":100,"currency":"usd"`,
		`{"amount":100,"currency":"usd"} {}`,
		`{"currency":"usd"}`,
		`{"amount":0,"currency":"usd"}`,
		`{"amount":-5,"currency":"usd"}`,
		`{"amount":1.5,"currency":"usd"}`,
		`{"amount":"100","currency":"usd"}`,
		`{"amount":100}`,
		`{"amount":100,"currency":"us"}`,
		`{"amount":100,"currency":"us1"}`,
		`{"amount":100,"currency":"usd","customer":7}`,
	}
	for _, b := range bodies {
		tl := newTestLab(t, Config{})
		w := tl.do(t, charge("a", "k", b))
		if w.Code != http.StatusBadRequest {
			t.Errorf("POST /charges %s = %d, want 400", b, w.Code)
		}
		if n := tl.Processor().total(); n != 0 {
			t.Errorf("POST /charges %s: processor charges = %d, want 0", b, n)
		}
	}
	tl := newTestLab(t, Config{})
	wantStatus(t, "no customer", tl.do(t, charge("a", "k", `{"amount":1,"currency":"EUR"}`)), http.StatusCreated)
}

func TestChargeReplay(t *testing.T) {
	tl := newTestLab(t, Config{})
	first := tl.do(t, charge("alice", "k1", body1))
	wantStatus(t, "first", first, http.StatusCreated)
	tl.clock.Advance(time.Hour)

	reordered := `{ "customer" : "cus_1", "currency":"usd",
		"amount": 100 }`
	for name, b := range map[string]string{"same body": body1, "reordered body": reordered} {
		w := tl.do(t, charge("alice", "k1", b))
		wantStatus(t, name, w, http.StatusCreated)
		if got := w.Header().Get("Idempotent-Replayed"); got != "true" {
			t.Errorf("%s: Idempotent-Replayed = %q, want true", name, got)
		}
		if !bytes.Equal(w.Body.Bytes(), first.Body.Bytes()) {
			t.Errorf("%s: replay body = %s, want byte-identical %s", name, w.Body, first.Body)
		}
	}

	// Replayed from the ledger when the cache has lost the entry.
	if err := tl.cache.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	w := tl.do(t, charge("alice", "k1", body1))
	if w.Header().Get("Idempotent-Replayed") != "true" || !bytes.Equal(w.Body.Bytes(), first.Body.Bytes()) {
		t.Errorf("replay from the ledger = %q %s, want the first answer", w.Header().Get("Idempotent-Replayed"), w.Body)
	}

	// Same key, other payload: 422, no effect, in both the cache and ledger paths.
	other := `{"amount":200,"currency":"usd","customer":"cus_1"}`
	wantProblem(t, "other payload (cache)", tl.do(t, charge("alice", "k1", other)), http.StatusUnprocessableEntity)
	_ = tl.cache.Reset(context.Background())
	wantProblem(t, "other payload (ledger)", tl.do(t, charge("alice", "k1", other)), http.StatusUnprocessableEntity)

	if n := tl.ledgerCount(t, "k1"); n != 1 {
		t.Errorf("ledger rows for k1 = %d, want 1", n)
	}
	if n := tl.Processor().total(); n != 1 {
		t.Errorf("processor charges = %d, want 1", n)
	}
}

func TestChargeKeysScopedPerUser(t *testing.T) {
	tl := newTestLab(t, Config{})
	a := tl.do(t, charge("alice", "shared", body1))
	b := tl.do(t, charge("bob", "shared", body1))
	anon := tl.do(t, req{method: "POST", path: "/charges", key: "shared", body: body1})
	for name, w := range map[string]*httptest.ResponseRecorder{"alice": a, "bob": b, "anonymous": anon} {
		wantStatus(t, name, w, http.StatusCreated)
		if w.Header().Get("Idempotent-Replayed") != "" {
			t.Errorf("%s: answer was a replay, want a new charge", name)
		}
	}
	if decodeJSON(t, a)["id"] == decodeJSON(t, b)["id"] {
		t.Errorf("alice and bob got the same charge %v", decodeJSON(t, a)["id"])
	}
	if n := tl.ledgerCount(t, "shared"); n != 3 {
		t.Errorf("ledger rows for the shared key = %d, want 3 (one per user)", n)
	}
}

func TestChargeInFlight(t *testing.T) {
	ctx := context.Background()
	t.Run("ledger record in flight", func(t *testing.T) {
		tl := newTestLab(t, Config{})
		now := tl.clock.Now()
		if _, _, err := tl.ledger.BeginKey(ctx, KeyRecord{ID: KeyID{"alice", "k1"}, State: KeyInFlight, Owner: "other", ExpiresAt: now.Add(time.Minute)}, now); err != nil {
			t.Fatal(err)
		}
		w := tl.do(t, charge("alice", "k1", body1))
		wantProblem(t, "in flight", w, http.StatusConflict)
		if got := w.Header().Get("Retry-After"); got != "1" {
			t.Errorf("Retry-After = %q, want 1", got)
		}
		// The lease runs out: the key is usable again.
		tl.clock.Advance(2 * time.Minute)
		wantStatus(t, "after the lease", tl.do(t, charge("alice", "k1", body1)), http.StatusCreated)
	})
	t.Run("cache lock held", func(t *testing.T) {
		tl := newTestLab(t, Config{})
		if ok, _ := tl.cache.Lock(ctx, "alice|k1", "other", time.Minute); !ok {
			t.Fatal("Lock failed")
		}
		w := tl.do(t, charge("alice", "k1", body1))
		wantProblem(t, "locked", w, http.StatusConflict)
		if got := w.Header().Get("Retry-After"); got != "1" {
			t.Errorf("Retry-After = %q, want 1", got)
		}
		if n := tl.Processor().total(); n != 0 {
			t.Errorf("processor charges = %d, want 0", n)
		}
	})
}

// duplicates sends n copies of r at once and returns the answers.
func duplicates(h http.Handler, r req, n int) []*httptest.ResponseRecorder {
	out := make([]*httptest.ResponseRecorder, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i] = serve(h, r, context.Background())
		}()
	}
	close(start)
	wg.Wait()
	return out
}

func TestChargeConcurrentDuplicates(t *testing.T) {
	tl := newTestLab(t, Config{ProcessorLatency: 30 * time.Millisecond})
	answers := duplicates(tl, charge("alice", "k1", body1), 20)
	var first []byte
	fresh := 0
	for _, w := range answers {
		switch {
		case w.Code == http.StatusCreated && w.Header().Get("Idempotent-Replayed") == "":
			fresh++
			first = w.Body.Bytes()
		case w.Code == http.StatusCreated, w.Code == http.StatusConflict:
		default:
			t.Errorf("duplicate answered %d %s, want 201 or 409", w.Code, w.Body)
		}
	}
	if fresh != 1 {
		t.Fatalf("fresh 201 answers = %d, want 1", fresh)
	}
	for _, w := range answers {
		if w.Code == http.StatusCreated && !bytes.Equal(w.Body.Bytes(), first) {
			t.Errorf("replay %s differs from the first answer %s", w.Body, first)
		}
	}
	if n := tl.Processor().total(); n != 1 {
		t.Errorf("processor charges = %d, want 1", n)
	}
	if n := tl.ledgerCount(t, "k1"); n != 1 {
		t.Errorf("ledger rows = %d, want 1", n)
	}
	// Retrying after the winner finished replays.
	w := tl.do(t, charge("alice", "k1", body1))
	if w.Header().Get("Idempotent-Replayed") != "true" || !bytes.Equal(w.Body.Bytes(), first) {
		t.Errorf("retry after the duplicates = %d %s, want a replay", w.Code, w.Body)
	}
}

func TestChargeTimedOutClientStillCompletes(t *testing.T) {
	t.Parallel()
	t.Run("cancelled context", func(t *testing.T) {
		tl := newTestLab(t, Config{ProcessorLatency: 20 * time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		serve(tl, charge("alice", "k1", body1), ctx)
		if n := tl.Processor().total(); n != 1 {
			t.Errorf("processor charges after a cancelled request = %d, want 1", n)
		}
		if n := tl.ledgerCount(t, "k1"); n != 1 {
			t.Errorf("ledger rows after a cancelled request = %d, want 1", n)
		}
		w := tl.do(t, charge("alice", "k1", body1))
		if w.Header().Get("Idempotent-Replayed") != "true" {
			t.Errorf("retry = %d %s, want a replay", w.Code, w.Body)
		}
	})
	t.Run("client timeout over HTTP", func(t *testing.T) {
		tl := newTestLab(t, Config{ProcessorLatency: 200 * time.Millisecond})
		srv := httptest.NewServer(tl)
		client := &http.Client{Timeout: 20 * time.Millisecond}
		r, _ := http.NewRequest("POST", srv.URL+"/charges", strings.NewReader(body1))
		r.Header.Set("Idempotency-Key", "k1")
		resp, err := client.Do(r)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("request answered %d before the processor finished, want a client timeout", resp.StatusCode)
		}
		if n := tl.Processor().total(); n != 0 {
			t.Fatalf("processor charges at the client timeout = %d, want 0 (still in flight)", n)
		}
		// A retry overlapping the original is told to wait.
		w := tl.do(t, req{method: "POST", path: "/charges", key: "k1", body: body1})
		wantStatus(t, "overlapping retry", w, http.StatusConflict)
		srv.Close() // waits for the handler
		if n := tl.Processor().total(); n != 1 {
			t.Errorf("processor charges after the handler finished = %d, want 1", n)
		}
		if n := tl.ledgerCount(t, "k1"); n != 1 {
			t.Errorf("ledger rows after the handler finished = %d, want 1", n)
		}
	})
}

func TestChargeProcessorFailure(t *testing.T) {
	tl := newTestLab(t, Config{})
	fail := `{"amount":100,"currency":"usd","customer":"` + FailCustomer + `"}`
	for i := range 2 { // the key is released: the retry tries again, not 409
		wantProblem(t, "processor failure", tl.do(t, charge("alice", "k1", fail)), http.StatusBadGateway)
		if _, found, _ := tl.ledger.LookupKey(context.Background(), KeyID{"alice", "k1"}, tl.clock.Now()); found {
			t.Errorf("attempt %d: key record kept after a processor failure", i)
		}
	}
	if n := tl.ledgerCount(t, "k1"); n != 0 {
		t.Errorf("ledger rows = %d, want 0", n)
	}
	if n := tl.Processor().total(); n != 0 {
		t.Errorf("processor charges = %d, want 0", n)
	}
}

// faultyLedger fails chosen calls.
type faultyLedger struct {
	*MemoryLedger
	failComplete bool
}

var errDown = errors.New("backend down")

func (l *faultyLedger) CompleteCharge(ctx context.Context, rec KeyRecord, ch Charge) error {
	if l.failComplete {
		return errDown
	}
	return l.MemoryLedger.CompleteCharge(ctx, rec, ch)
}

// faultyCache fails every call.
type faultyCache struct{ *MemoryCache }

func (faultyCache) Get(context.Context, string) (Entry, bool, error) { return Entry{}, false, errDown }
func (faultyCache) Lock(context.Context, string, string, time.Duration) (bool, error) {
	return false, errDown
}

func TestChargeFailsClosed(t *testing.T) {
	t.Run("cache down", func(t *testing.T) {
		s, err := New(Config{ProcessorLatency: -1}, NewMemoryLedger(), faultyCache{NewMemoryCache(nil)})
		if err != nil {
			t.Fatal(err)
		}
		w := serve(s, charge("a", "k1", body1), context.Background())
		wantProblem(t, "cache down", w, http.StatusServiceUnavailable)
		if n := s.Processor().total(); n != 0 {
			t.Errorf("processor charges with the cache down = %d, want 0", n)
		}
	})
	t.Run("ledger write fails", func(t *testing.T) {
		l := &faultyLedger{MemoryLedger: NewMemoryLedger(), failComplete: true}
		s, err := New(Config{ProcessorLatency: -1}, l, NewMemoryCache(nil))
		if err != nil {
			t.Fatal(err)
		}
		wantProblem(t, "ledger down", serve(s, charge("a", "k1", body1), context.Background()), http.StatusServiceUnavailable)
		if rows, _ := l.ChargesByKey(context.Background(), "k1"); len(rows) != 0 {
			t.Errorf("ledger rows after a failed write = %d, want 0", len(rows))
		}
		// The processor charge the ledger could not record was voided.
		if n := s.Processor().total(); n != 0 {
			t.Errorf("processor charges after a 503 = %d, want 0", n)
		}
		// The retry succeeds and the processor charges once.
		l.failComplete = false
		wantStatus(t, "retry", serve(s, charge("a", "k1", body1), context.Background()), http.StatusCreated)
		if n := s.Processor().total(); n != 1 {
			t.Errorf("processor charges after the retry = %d, want 1", n)
		}
		if rows, _ := l.ChargesByKey(context.Background(), "k1"); len(rows) != 1 {
			t.Errorf("ledger rows after the retry = %d, want 1", len(rows))
		}
	})
}

func TestNaiveCharges(t *testing.T) {
	tl := newTestLab(t, Config{})
	for range 2 {
		w := tl.do(t, req{method: "POST", path: "/naive/charges", key: "k1", body: body1})
		wantStatus(t, "naive", w, http.StatusCreated)
	}
	wantStatus(t, "naive without key", tl.do(t, req{method: "POST", path: "/naive/charges", noKey: true, body: body1}), http.StatusCreated)
	wantStatus(t, "naive bad body", tl.do(t, req{method: "POST", path: "/naive/charges", body: `{}`}), http.StatusBadRequest)

	w := tl.do(t, req{method: "GET", path: "/charges?idempotency_key=k1"})
	wantStatus(t, "GET /charges", w, http.StatusOK)
	got := decodeJSON(t, w)
	if got["idempotency_key"] != "k1" || got["count"] != float64(2) || len(got["charges"].([]any)) != 2 {
		t.Errorf("GET /charges = %v, want k1 with 2 charges", got)
	}
	row := got["charges"].([]any)[0].(map[string]any)
	if row["idempotency_key"] != "k1" || row["id"] != "ch_1" || row["amount"] != float64(100) {
		t.Errorf("ledger row = %v", row)
	}

	w = tl.do(t, req{method: "GET", path: "/processor/charges?idempotency_key=k1"})
	got = decodeJSON(t, w)
	if got["count"] != float64(2) {
		t.Errorf("GET /processor/charges = %v, want count 2", got)
	}
	for _, path := range []string{"/charges/counts", "/processor/charges/counts"} {
		w := tl.do(t, req{method: "GET", path: path})
		wantStatus(t, path, w, http.StatusOK)
		if diff := cmp.Diff(`{"counts":{"k1":2}}`+"\n", w.Body.String()); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", path, diff)
		}
	}
	for _, path := range []string{"/charges", "/processor/charges"} {
		wantProblem(t, "GET "+path+" without key", tl.do(t, req{method: "GET", path: path}), http.StatusBadRequest)
	}
	w = tl.do(t, req{method: "GET", path: "/charges?idempotency_key=none"})
	if diff := cmp.Diff(`{"idempotency_key":"none","count":0,"charges":[]}`+"\n", w.Body.String()); diff != "" {
		t.Errorf("GET /charges for an unknown key (-want +got):\n%s", diff)
	}
}

func TestAccounts(t *testing.T) {
	tl := newTestLab(t, Config{})
	debit := func(path, body string) *httptest.ResponseRecorder {
		return tl.do(t, req{method: "POST", path: path, body: body, noKey: true})
	}
	wantProblem(t, "GET unknown", tl.do(t, req{method: "GET", path: "/accounts/a1"}), http.StatusNotFound)
	wantProblem(t, "PUT no balance", tl.do(t, req{method: "PUT", path: "/accounts/a1", body: `{}`}), http.StatusBadRequest)
	w := tl.do(t, req{method: "PUT", path: "/accounts/a1", body: `{"balance":100}`})
	wantStatus(t, "PUT", w, http.StatusOK)
	if diff := cmp.Diff(`{"id":"a1","balance":100,"version":0}`+"\n", w.Body.String()); diff != "" {
		t.Errorf("PUT /accounts/a1 (-want +got):\n%s", diff)
	}

	steps := []struct {
		name, path, body string
		status           int
		want             string // body, or "" to check only the status
	}{
		{"debit", "/accounts/a1/debit", `{"amount":30,"expected_version":0,"op_id":"o1"}`, 200, `{"id":"a1","balance":70,"version":1}`},
		{"stale", "/accounts/a1/debit", `{"amount":30,"expected_version":0,"op_id":"o1"}`, 409,
			`{"type":"about:blank","title":"version conflict","status":409,"detail":"expected_version is not the current version","current_version":1}`},
		{"insufficient", "/accounts/a1/debit", `{"amount":71,"expected_version":1,"op_id":"o2"}`, 422, ""},
		{"zero amount", "/accounts/a1/debit", `{"amount":0,"expected_version":1}`, 400, ""},
		{"no version", "/accounts/a1/debit", `{"amount":1}`, 400, ""},
		{"bad json", "/accounts/a1/debit", `{"amount":`, 400, ""},
		{"unknown account", "/accounts/zz/debit", `{"amount":1,"expected_version":0}`, 404, ""},
		{"naive ignores version", "/naive/accounts/a1/debit", `{"amount":10,"expected_version":0,"op_id":"o3"}`, 200, `{"id":"a1","balance":60,"version":2}`},
		{"naive no version", "/naive/accounts/a1/debit", `{"amount":10,"op_id":"o4"}`, 200, `{"id":"a1","balance":50,"version":3}`},
	}
	for _, s := range steps {
		w := debit(s.path, s.body)
		if w.Code != s.status {
			t.Errorf("%s: POST %s %s = %d %s, want %d", s.name, s.path, s.body, w.Code, w.Body, s.status)
			continue
		}
		if s.want != "" && w.Body.String() != s.want+"\n" {
			t.Errorf("%s: body = %s, want %s", s.name, w.Body, s.want)
		}
	}
	w = tl.do(t, req{method: "GET", path: "/accounts/a1/debits"})
	want := `{"id":"a1","debits":[{"op_id":"o1","amount":30,"version":1},{"op_id":"o3","amount":10,"version":2},{"op_id":"o4","amount":10,"version":3}]}` + "\n"
	if diff := cmp.Diff(want, w.Body.String()); diff != "" {
		t.Errorf("GET debits (-want +got):\n%s", diff)
	}
	w = tl.do(t, req{method: "GET", path: "/accounts/a1"})
	if diff := cmp.Diff(`{"id":"a1","balance":50,"version":3}`+"\n", w.Body.String()); diff != "" {
		t.Errorf("GET account (-want +got):\n%s", diff)
	}
	tl.do(t, req{method: "PUT", path: "/accounts/a1", body: `{"balance":5}`})
	w = tl.do(t, req{method: "GET", path: "/accounts/a1/debits"})
	if diff := cmp.Diff(`{"id":"a1","debits":[]}`+"\n", w.Body.String()); diff != "" {
		t.Errorf("GET debits after PUT (-want +got):\n%s", diff)
	}
	wantProblem(t, "debits of unknown", tl.do(t, req{method: "GET", path: "/accounts/zz/debits"}), http.StatusNotFound)
}

func TestLikes(t *testing.T) {
	tl := newTestLab(t, Config{})
	like := func(path, body string) string {
		w := tl.do(t, req{method: "POST", path: path, body: body, noKey: true})
		return w.Body.String()
	}
	wantProblem(t, "no op_id", tl.do(t, req{method: "POST", path: "/posts/p1/like", body: `{}`}), http.StatusBadRequest)
	steps := []struct{ path, body, want string }{
		{"/posts/p1/like", `{"op_id":"o1"}`, `{"id":"p1","likes":1}`},
		{"/posts/p1/like", `{"op_id":"o1"}`, `{"id":"p1","likes":1}`},
		{"/posts/p1/like", `{"op_id":"o2"}`, `{"id":"p1","likes":2}`},
		{"/naive/posts/p1/like", `{"op_id":"o2"}`, `{"id":"p1","likes":3}`},
		{"/naive/posts/p1/like", ``, `{"id":"p1","likes":4}`},
	}
	for _, s := range steps {
		if got := like(s.path, s.body); got != s.want+"\n" {
			t.Errorf("POST %s %s = %s, want %s", s.path, s.body, got, s.want)
		}
	}
	if got := tl.do(t, req{method: "GET", path: "/posts/unknown"}).Body.String(); got != `{"id":"unknown","likes":0}`+"\n" {
		t.Errorf("GET unknown post = %s", got)
	}
	answers := duplicates(tl, req{method: "POST", path: "/posts/p2/like", body: `{"op_id":"dup"}`}, 20)
	for _, w := range answers {
		wantStatus(t, "duplicate like", w, http.StatusOK)
	}
	if got := tl.do(t, req{method: "GET", path: "/posts/p2"}).Body.String(); got != `{"id":"p2","likes":1}`+"\n" {
		t.Errorf("after 20 duplicate likes GET = %s, want 1 like", got)
	}
}

func TestOperations(t *testing.T) {
	tl := newTestLab(t, Config{})
	if got := tl.do(t, req{method: "GET", path: "/healthz"}).Body.String(); got != `{"status":"ok"}`+"\n" {
		t.Errorf("GET /healthz = %s", got)
	}
	wantProblem(t, "unknown route", tl.do(t, req{method: "GET", path: "/nope"}), http.StatusNotFound)
	w := tl.do(t, req{method: "DELETE", path: "/charges"})
	wantProblem(t, "wrong method", w, http.StatusMethodNotAllowed)
	if allow := w.Header().Get("Allow"); !strings.Contains(allow, "POST") || !strings.Contains(allow, "GET") {
		t.Errorf("DELETE /charges Allow = %q, want GET and POST", allow)
	}
	wantProblem(t, "reset disabled", tl.do(t, req{method: "POST", path: "/reset"}), http.StatusForbidden)

	tl = newTestLab(t, Config{AllowReset: true})
	tl.do(t, charge("a", "k1", body1))
	tl.do(t, req{method: "PUT", path: "/accounts/a1", body: `{"balance":5}`})
	tl.do(t, req{method: "POST", path: "/posts/p1/like", body: `{"op_id":"o"}`})
	wantStatus(t, "reset", tl.do(t, req{method: "POST", path: "/reset"}), http.StatusNoContent)
	if n := tl.ledgerCount(t, "k1"); n != 0 {
		t.Errorf("ledger rows after reset = %d", n)
	}
	if n := tl.Processor().total(); n != 0 {
		t.Errorf("processor charges after reset = %d", n)
	}
	wantStatus(t, "account after reset", tl.do(t, req{method: "GET", path: "/accounts/a1"}), http.StatusNotFound)
	// The key is usable again: a new charge, not a replay.
	w = tl.do(t, charge("a", "k1", body1))
	if w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "" {
		t.Errorf("charge after reset = %d replayed=%q, want a new 201", w.Code, w.Header().Get("Idempotent-Replayed"))
	}
}

func TestNewRejectsUnknownBug(t *testing.T) {
	_, err := NewMemory(Config{Bugs: []string{"no-key", "typo"}})
	if !errors.Is(err, ErrUnknownBug) {
		t.Fatalf("NewMemory(typo) = %v, want ErrUnknownBug", err)
	}
	for _, b := range Bugs() {
		if !strings.Contains(err.Error(), b.Name) {
			t.Errorf("error %q does not list known bug %q", err, b.Name)
		}
	}
	if _, err := New(Config{}, nil, nil); err == nil {
		t.Error("New(nil backends) = nil error")
	}
}

func TestBugs(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range Bugs() {
		if seen[b.Name] || b.Description == "" {
			t.Errorf("Bugs(): %q duplicated or undescribed", b.Name)
		}
		seen[b.Name] = true
		s, err := NewMemory(Config{Bugs: []string{b.Name}})
		if err != nil {
			t.Errorf("NewMemory(bug %s) = %v", b.Name, err)
			continue
		}
		if got := s.bugs; len(got) != 1 || !got[b.Name] {
			t.Errorf("NewMemory(bug %s): bugs %v, want that one", b.Name, got)
		}
	}
	if len(seen) != 39 {
		t.Errorf("Bugs() has %d bugs, want 39", len(seen))
	}
}

func TestFingerprintCanonical(t *testing.T) {
	fp := func(b string) string {
		c, _, err := canonical([]byte(b))
		if err != nil {
			t.Fatalf("canonical(%s) = %v", b, err)
		}
		return fingerprint("op", c)
	}
	a := fp(`{"a":1,"b":{"y":[1,2],"x":"s"}}`)
	if b := fp(" {\"b\":{\"x\":\"s\",\"y\":[1, 2]},\n\"a\":1} "); a != b {
		t.Errorf("reordered JSON has another fingerprint")
	}
	if b := fp(`{"a":1,"b":{"y":[2,1],"x":"s"}}`); a == b {
		t.Errorf("a different array order has the same fingerprint")
	}
	if b := fp(`{"a":2,"b":{"y":[1,2],"x":"s"}}`); a == b {
		t.Errorf("a different value has the same fingerprint")
	}
}

func TestStoreLatency(t *testing.T) {
	tl := newTestLab(t, Config{StoreLatency: 5 * time.Millisecond})
	start := time.Now()
	wantStatus(t, "charge", tl.do(t, charge("a", "k1", body1)), http.StatusCreated)
	// Get, Lock, Put and Unlock: four roundtrips.
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("charge with StoreLatency 5ms took %v, want >= 20ms", d)
	}
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{body1, `{"b":[1,{"d":2,"c":1}],"a":null}`, `"x"`, `1e3`, `{"a":"\u00e9<>&"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c1, _, err := canonical(body)
		if err != nil {
			return
		}
		c2, _, err := canonical(c1)
		if err != nil {
			t.Fatalf("canonical(%q) = %q, which does not parse: %v", body, c1, err)
		}
		if !bytes.Equal(c1, c2) {
			t.Errorf("canonical is not idempotent: %q -> %q -> %q", body, c1, c2)
		}
	})
}
