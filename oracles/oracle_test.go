package oracles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
)

// get returns a RequestFunc for GET base+path, with {key} replaced by the
// escaped key and a bearer token that must never appear in errors.
func get(base, path string) RequestFunc {
	return func(ctx context.Context, key string) (*http.Request, error) {
		p := strings.ReplaceAll(path, "{key}", url.QueryEscape(key))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+p, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer s3cret-token")
		return req, nil
	}
}

func keysHistory(keys ...string) *history.History {
	var ops []op
	for _, k := range keys {
		ops = append(ops, o(k, ok(201)))
	}
	return hist(ops...)
}

// spilled is h with its ops and attempts on disk, as a long run's are
// (history.Spill): the oracles read its keys from there.
func spilled(t *testing.T, h *history.History) *history.History {
	t.Helper()
	f, err := history.CreateSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i, op := range h.Ops {
		if err := f.Records().Op(op, h.AttemptsOf(i)); err != nil {
			t.Fatal(err)
		}
	}
	sp, err := f.Finish()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Remove() })
	return &history.History{Meta: h.Meta, Spill: sp}
}

func TestHTTPEffectsPerKey(t *testing.T) {
	counts := map[string]int{"k1": 1, "k2": 2, "k 3": 0}
	for i := range 20 {
		counts[fmt.Sprintf("x%d", i)] = i % 3
	}
	const conc = 4
	// server counts the reads in flight; it holds the first ones until conc
	// of them are in flight, so the test sees the pool at its bound (with a
	// bounded wait if it never fills).
	server := func() (*httptest.Server, *atomic.Int64) {
		var inFlight, maxInFlight atomic.Int64
		full := make(chan struct{})
		var fullOnce sync.Once
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer s3cret-token" {
				http.Error(w, "no auth", http.StatusUnauthorized)
				return
			}
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				m := maxInFlight.Load()
				if n <= m || maxInFlight.CompareAndSwap(m, n) {
					break
				}
			}
			if n == conc {
				fullOnce.Do(func() { close(full) })
			}
			select {
			case <-full:
			case <-time.After(5 * time.Second):
			}
			k := r.URL.Query().Get("idempotency_key")
			c := counts[k]
			charges := make([]map[string]any, c)
			for i := range charges {
				charges[i] = map[string]any{"id": fmt.Sprintf("ch_%d", i)}
			}
			json.NewEncoder(w).Encode(map[string]any{"idempotency_key": k, "count": c, "charges": charges})
		}))
		return srv, &maxInFlight
	}

	var keys []string
	want := map[string]int{}
	for k, c := range counts {
		keys = append(keys, k)
		if c != 0 {
			want[k] = c
		}
	}
	h := keysHistory(append(keys, "k1")...) // a shared key is read once

	for _, value := range []string{"$.count", "$.charges"} {
		srv, maxInFlight := server()
		oracle := &HTTPEffects{OracleName: "ledger", PerKey: get(srv.URL, "/charges?idempotency_key={key}"), Value: value, Concurrency: conc}
		obs, err := oracle.Observe(context.Background(), h)
		if err != nil {
			t.Fatalf("Observe(%s) error: %v", value, err)
		}
		wantObs := &history.Reading{Oracle: "ledger", Kind: history.KindEffects, Effects: want}
		if diff := cmp.Diff(wantObs, obs); diff != "" {
			t.Errorf("Observe(%s) (-want +got):\n%s", value, diff)
		}
		if m := maxInFlight.Load(); m != conc {
			t.Errorf("Observe(%s) max in flight = %d, want %d", value, m, conc)
		}
		srv.Close()
	}
}

func TestHTTPEffectsBulk(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/counts":
			fmt.Fprint(w, `{"counts":{"k1":1,"k2":2,"k3":0,"other-run":9}}`)
		case "/keys":
			fmt.Fprint(w, `{"charges":["k1","k2","k2","other-run"]}`)
		case "/bad-count":
			fmt.Fprint(w, `{"counts":{"k1":"many"}}`)
		case "/bad-key":
			fmt.Fprint(w, `{"charges":["k1",{"key":"k2"}]}`)
		case "/scalar":
			fmt.Fprint(w, `{"counts":3}`)
		}
	}))
	defer srv.Close()
	h := keysHistory("k1", "k2", "k3")
	want := map[string]int{"k1": 1, "k2": 2}
	for _, tt := range []struct{ path, value string }{{"/counts", "$.counts"}, {"/keys", "$.charges"}} {
		oracle := &HTTPEffects{OracleName: "ledger", Bulk: get(srv.URL, tt.path), Value: tt.value}
		obs, err := oracle.Observe(context.Background(), h)
		if err != nil {
			t.Fatalf("Observe(%s) error: %v", tt.path, err)
		}
		if diff := cmp.Diff(want, obs.Effects); diff != "" {
			t.Errorf("Observe(%s).Effects (-want +got):\n%s", tt.path, diff)
		}
	}
	// without a history every key is kept
	obs, err := (&HTTPEffects{OracleName: "ledger", Bulk: get(srv.URL, "/counts"), Value: "$.counts"}).Observe(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"k1": 1, "k2": 2, "other-run": 9}, obs.Effects); diff != "" {
		t.Errorf("Observe(nil history).Effects (-want +got):\n%s", diff)
	}
	for _, tt := range []struct{ path, value, msg string }{
		{"/bad-count", "$.counts", `$.counts["k1"] is "many" (a string), unexpected type: want an integer`},
		{"/bad-key", "$.charges", `$.charges[1] is {"key":"k2"} (an object), unexpected type: want a key (a string)`},
		{"/scalar", "$.counts", `$.counts is 3 (a number), unexpected type: want an object of counts by key, an array of keys, or a path like $.data[*].key`},
	} {
		_, err := (&HTTPEffects{OracleName: "ledger", Bulk: get(srv.URL, tt.path), Value: tt.value}).Observe(context.Background(), h)
		if !errors.Is(err, ErrType) || !strings.HasSuffix(err.Error(), tt.msg) {
			t.Errorf("Observe(%s) error = %v, want ErrType ending %q", tt.path, err, tt.msg)
		}
	}
	if _, err := (&HTTPEffects{OracleName: "ledger"}).Observe(context.Background(), h); err == nil {
		t.Errorf("Observe with no request = nil error, want one")
	}
}

func TestHTTPCounter(t *testing.T) {
	var likes atomic.Int64
	likes.Store(40)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"id":"p1","likes":%d}`, likes.Load())
	}))
	defer srv.Close()
	c := &HTTPCounter{OracleName: "likes", Request: get(srv.URL, "/posts/p1"), Value: "$.likes"}
	if _, err := c.Observe(context.Background(), nil); !errors.Is(err, ErrNoBefore) {
		t.Errorf("Observe before Before error = %v, want ErrNoBefore", err)
	}
	if err := c.Before(context.Background()); err != nil {
		t.Fatal(err)
	}
	likes.Add(7)
	obs, err := c.Observe(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, a := int64(40), int64(47)
	if diff := cmp.Diff(&history.Reading{Oracle: "likes", Kind: history.KindCounter, Before: &b, After: &a}, obs); diff != "" {
		t.Errorf("Observe (-want +got):\n%s", diff)
	}
}

func TestHTTPAccount(t *testing.T) {
	var mu sync.Mutex
	balance, version := int64(1000), int64(2)
	debits := []string{`{"op_id":"old","amount":5,"version":2}`}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/accounts/a1":
			fmt.Fprintf(w, `{"id":"a1","balance":%d,"version":%d}`, balance, version)
		case "/accounts/a1/debits":
			fmt.Fprintf(w, `{"id":"a1","debits":[%s]}`, strings.Join(debits, ","))
		}
	}))
	defer srv.Close()
	acc := &HTTPAccount{
		OracleName: "acct", Request: get(srv.URL, "/accounts/a1"), Balance: "$.balance", Version: "$.version",
		Applied: get(srv.URL, "/accounts/a1/debits"), List: "$.debits", Key: "$.op_id", Amount: "$.amount",
	}
	if err := acc.Before(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	balance, version = 970, 4
	debits = append(debits, `{"op_id":"d1","amount":10,"version":3}`, `{"op_id":"d2","amount":20,"version":4}`)
	mu.Unlock()
	obs, err := acc.Observe(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &history.Reading{Oracle: "acct", Kind: history.KindAccount, Account: &history.Account{
		BalanceBefore: 1000, BalanceAfter: 970, VersionBefore: 2, VersionAfter: 4,
		Applied: []history.Applied{{Key: "d1", Amount: 10}, {Key: "d2", Amount: 20}},
	}}
	if diff := cmp.Diff(want, obs); diff != "" {
		t.Errorf("Observe (-want +got):\n%s", diff)
	}
	v := checks.Check(hist(o("d1", ok(200)), o("d2", lost(), ok(409))), history.Invariant{Check: checks.ConditionalUpdate, Oracle: "acct"}, obs)
	if v.Status != checks.Pass {
		t.Errorf("checks.Check(conditional_update) = %s %s, want pass", v.Status, v.Summary)
	}

	mu.Lock()
	debits = append(debits, `{"op_id":"d3"}`)
	mu.Unlock()
	_, err = acc.Observe(context.Background(), nil)
	if !errors.Is(err, ErrNoMatch) || !strings.Contains(err.Error(), `$.debits[3]: $.amount matched nothing in {"op_id":"d3"}`) {
		t.Errorf("Observe error = %v, want ErrNoMatch naming $.debits[3]", err)
	}

	noApplied := &HTTPAccount{OracleName: "acct", Request: get(srv.URL, "/accounts/a1"), Balance: "$.balance", Version: "$.version",
		List: "$.debits", Key: "$.op_id", Amount: "$.amount"}
	if err := noApplied.Before(context.Background()); err == nil {
		t.Errorf("Before without an applied request = nil error, want one")
	}
	noPath := &HTTPAccount{OracleName: "acct", Request: get(srv.URL, "/accounts/a1"), Applied: get(srv.URL, "/accounts/a1/debits")}
	if err := noPath.Before(context.Background()); err == nil || !strings.Contains(err.Error(), "no JSONPath for the balance") {
		t.Errorf("Before without paths error = %v, want one naming the balance", err)
	}
}

func TestOracleErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/500":
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"type":"about:blank","title":"boom","status":500}`)
		case "/garbage":
			fmt.Fprint(w, "<html>not json</html>")
		case "/long":
			fmt.Fprintf(w, `{"x":"%s"}`, strings.Repeat("y", 500))
		case "/string":
			fmt.Fprint(w, `{"count":"three"}`)
		case "/many":
			fmt.Fprint(w, `{"a":[{"count":1},{"count":2}]}`)
		default:
			fmt.Fprint(w, `{"likes":3}`)
		}
	}))
	defer srv.Close()
	tests := []struct {
		path, value string
		is          error
		msg         string
	}{
		{"/500", "$.count", ErrStatus, `oracle likes: GET ` + srv.URL + `/500: status 500: non-2xx answer: {"type":"about:blank","title":"boom","status":500}`},
		{"/garbage", "$.count", ErrNotJSON, `oracle likes: GET ` + srv.URL + `/garbage: status 200: invalid json (invalid character '<' looking for beginning of value) in <html>not json</html>`},
		{"/ok", "$.count", ErrNoMatch, `oracle likes: GET ` + srv.URL + `/ok: status 200: $.count matched nothing in {"likes":3}`},
		{"/long", "$.count", ErrNoMatch, `oracle likes: GET ` + srv.URL + `/long: status 200: $.count matched nothing in {"x":"` + strings.Repeat("y", 194) + "…"},
		{"/string", "$.count", ErrType, `oracle likes: GET ` + srv.URL + `/string: status 200: $.count is "three" (a string), unexpected type: want an integer`},
		{"/many", "$.a[*].count", ErrManyMatches, `oracle likes: GET ` + srv.URL + `/many: status 200: $.a[*].count matched more than one node (2 nodes) in {"a":[{"count":1},{"count":2}]}`},
	}
	for _, tt := range tests {
		c := &HTTPCounter{OracleName: "likes", Request: get(srv.URL, tt.path), Value: tt.value}
		err := c.Before(context.Background())
		if !errors.Is(err, tt.is) || err.Error() != tt.msg {
			t.Errorf("Before(%s) error =\n  %v\nwant (%v)\n  %s", tt.path, err, tt.is, tt.msg)
		}
		var re *ReadError
		if !errors.As(err, &re) || re.URL != srv.URL+tt.path {
			t.Errorf("Before(%s) error = %#v, want a ReadError with the URL", tt.path, err)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Before(%s) error leaks the token: %v", tt.path, err)
		}
		// the same read through an effects oracle, per key
		_, err = (&HTTPEffects{OracleName: "likes", PerKey: get(srv.URL, tt.path), Value: tt.value}).Observe(context.Background(), keysHistory("k"))
		if !errors.Is(err, tt.is) {
			t.Errorf("HTTPEffects.Observe(%s) error = %v, want %v", tt.path, err, tt.is)
		}
	}

	// no answer at all
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	err := (&HTTPCounter{OracleName: "likes", Request: get(closed.URL, "/x?token=abc&idempotency_key=k")}).Before(context.Background())
	var re *ReadError
	if !errors.As(err, &re) || re.Status != 0 || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Before(closed server) error = %v, want a ReadError without status", err)
	}
	if strings.Contains(err.Error(), "abc") || !strings.Contains(err.Error(), "idempotency_key=k") {
		t.Errorf("Before(closed server) error = %v, want the token redacted and the key kept", err)
	}

	// Observe folds a failure into the observation, and the checks say checks.Unknown
	obs := Observe(context.Background(), &HTTPEffects{OracleName: "ledger", PerKey: get(srv.URL, "/500"), Value: "$.count"}, keysHistory("k"))
	v := checks.Check(keysHistory("k"), history.Invariant{Check: checks.ExactlyOnce, Oracle: "ledger"}, obs)
	if v.Status != checks.Unknown || !strings.Contains(v.Reason, "status 500") {
		t.Errorf("Check on a failed observation = %s %q, want unknown naming the 500", v.Status, v.Reason)
	}
}

func TestPerKeyStopsOnFirstError(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	var keys []string
	for i := range 1000 {
		keys = append(keys, fmt.Sprintf("k%d", i))
	}
	_, err := (&HTTPEffects{OracleName: "ledger", PerKey: get(srv.URL, "/c?k={key}"), Concurrency: 2}).Observe(context.Background(), keysHistory(keys...))
	if !errors.Is(err, ErrStatus) {
		t.Fatalf("Observe error = %v, want ErrStatus", err)
	}
	if n := calls.Load(); n > 10 {
		t.Errorf("Observe made %d requests after the first error, want it to stop", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = (&HTTPEffects{OracleName: "ledger", PerKey: get(srv.URL, "/c?k={key}")}).Observe(ctx, keysHistory(keys...))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Observe(cancelled) error = %v, want context.Canceled", err)
	}
}

func TestSelect(t *testing.T) {
	body := []byte(`{"count":3,"big":9007199254740993,"f":2.0,"s":"12","arr":[1,2],"frac":1.5}`)
	tests := []struct {
		path string
		want any
		is   error
	}{
		{"$.count", int64(3), nil},
		{"$.big", int64(9007199254740993), nil},
		{"$.f", int64(2), nil},
		{"$.s", int64(12), nil},
		{"$.frac", nil, ErrType},
		{"$.arr", nil, ErrType},
		{"$.nope", nil, ErrNoMatch},
		{"$.arr[*]", nil, ErrManyMatches},
	}
	for _, tt := range tests {
		v, err := Select(body, tt.path)
		if err == nil {
			var p *path
			p, _ = compile(tt.path)
			var n int64
			n, err = toInt64(v, p)
			if err == nil && n != tt.want {
				t.Errorf("Select(%s) = %d, want %v", tt.path, n, tt.want)
			}
		}
		if !errors.Is(err, tt.is) {
			t.Errorf("Select(%s) error = %v, want %v", tt.path, err, tt.is)
		}
	}
	if _, err := Select(body, "$..["); err == nil || !strings.Contains(err.Error(), `bad path "$..["`) {
		t.Errorf("Select(bad path) error = %v, want a parse error", err)
	}
	if _, err := Select([]byte(`{"a":1} {"b":2}`), "$.a"); !errors.Is(err, ErrNotJSON) {
		t.Errorf("Select(two values) error = %v, want ErrNotJSON", err)
	}
	if _, err := Select(nil, "$"); !errors.Is(err, ErrNotJSON) || !strings.Contains(err.Error(), "an empty body") {
		t.Errorf("Select(empty) error = %v, want ErrNotJSON naming an empty body", err)
	}
}

func TestNames(t *testing.T) {
	for _, o := range []Oracle{&HTTPEffects{OracleName: "a"}, &HTTPCounter{OracleName: "a"}, &HTTPAccount{OracleName: "a"}} {
		if o.Name() != "a" {
			t.Errorf("%T.Name() = %q, want a", o, o.Name())
		}
	}
	if err := (&HTTPEffects{}).Before(context.Background()); err != nil {
		t.Errorf("HTTPEffects.Before = %v, want nil", err)
	}
}
