package oracles

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/testsvc"
)

// The reading before the load, saved in one process and loaded into the
// same oracle built in another, judges the run as if one process had
// read both: a counter's increment, an effects oracle's strangers, an
// account's balance before.
func TestSaveAndLoadBefore(t *testing.T) {
	var likes atomic.Int64
	likes.Store(10)
	var counts atomic.Value
	counts.Store(`{"counts":{"old":1}}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/likes":
			json.NewEncoder(w).Encode(map[string]int64{"likes": likes.Load()})
		case "/counts":
			w.Write([]byte(counts.Load().(string)))
		case "/account":
			w.Write([]byte(`{"balance":` + map[bool]string{true: "70", false: "100"}[likes.Load() > 10] + `,"version":1}`))
		case "/debits":
			w.Write([]byte(`{"debits":[]}`))
		}
	}))
	defer srv.Close()
	get := func(path string) RequestFunc {
		return func(ctx context.Context, _ string) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		}
	}
	build := func() []Oracle {
		return []Oracle{
			&HTTPCounter{OracleName: "likes", Client: srv.Client(), Request: get("/likes"), Value: "$.likes"},
			&HTTPEffects{OracleName: "ledger", Client: srv.Client(), Bulk: get("/counts"), Value: "$.counts"},
			&SumEffects{OracleName: "sum", Parts: []Oracle{&HTTPEffects{OracleName: "sum", Client: srv.Client(), Bulk: get("/counts"), Value: "$.counts"}}},
			&HTTPAccount{OracleName: "acct", Client: srv.Client(), Request: get("/account"), Balance: "$.balance", Version: "$.version",
				Applied: get("/debits"), List: "$.debits", Key: "$.key", Amount: "$.amount"},
		}
	}
	ctx := context.Background()
	saved := map[string]json.RawMessage{}
	for _, o := range build() {
		if err := o.Before(ctx); err != nil {
			t.Fatalf("%s: Before: %v", o.Name(), err)
		}
		raw, err := SaveBefore(o)
		if err != nil {
			t.Fatalf("%s: SaveBefore: %v", o.Name(), err)
		}
		saved[o.Name()] = raw
	}
	likes.Store(13) // the load
	counts.Store(`{"counts":{"old":2,"k1":1}}`)
	h := &history.History{Ops: []history.Op{{ID: 0, Key: "k1"}}}
	for _, o := range build() { // the judge's process
		// without the reading before: no increment, no strangers
		r, err := o.Observe(ctx, h)
		switch {
		case o.Name() == "likes" || o.Name() == "acct":
			if err == nil || !strings.Contains(err.Error(), ErrNoBefore.Error()) {
				t.Errorf("%s: observed without a reading before: %v", o.Name(), err)
			}
		case err != nil || r.Strangers != 0:
			t.Errorf("%s: without a reading before: %+v, %v; want no strangers", o.Name(), r, err)
		}
		if err := LoadBefore(o, saved[o.Name()]); err != nil {
			t.Fatalf("%s: LoadBefore: %v", o.Name(), err)
		}
		r, err = o.Observe(ctx, h)
		if err != nil {
			t.Fatalf("%s: Observe: %v", o.Name(), err)
		}
		switch o.Name() {
		case "likes":
			if *r.Before != 10 || *r.After != 13 {
				t.Errorf("likes before %d after %d, want 10 and 13", *r.Before, *r.After)
			}
		case "ledger":
			if r.Strangers != 1 || r.Effects["k1"] != 1 {
				t.Errorf("ledger reading %+v: want k1's effect and the stranger old (grown from its reading before)", r)
			}
		case "acct":
			if r.Account.BalanceBefore != 100 || r.Account.BalanceAfter != 70 {
				t.Errorf("account %+v: want 100 before, 70 after", r.Account)
			}
		}
	}
	if err := LoadBefore(build()[0], json.RawMessage(`{"not":"a number"}`)); err == nil {
		t.Error("a counter loaded an object as its reading")
	}
	if err := LoadBefore(build()[2], json.RawMessage(`[null, null]`)); err == nil {
		t.Error("a sum of one target loaded the readings of two")
	}
}

// The same through the stores: a Redis counter, a Postgres counter and a
// Postgres effects oracle read before the load in one process, loaded in
// another, judge as one process would have (the reading a sharded run's
// prepare phase hands its judge).
func TestSaveAndLoadBeforeStores(t *testing.T) {
	t.Parallel()
	rurl, dsn := testsvc.Redis(t), testsvc.Postgres(t)
	ctx := testCtx(t)
	rdb := redisClient(t, rurl)
	if err := rdb.Set(ctx, "likes:snap", 10, 0).Err(); err != nil {
		t.Fatal(err)
	}
	pgExec(t, dsn,
		`CREATE TABLE snap_posts (id text PRIMARY KEY, likes int)`,
		`INSERT INTO snap_posts VALUES ('p', 4)`,
		`CREATE TABLE snap_payments (idempotency_key text)`,
		`INSERT INTO snap_payments VALUES ('old')`)
	build := func() []Oracle {
		return []Oracle{
			&RedisCounter{OracleName: "redis", URL: rurl, Key: "likes:snap"},
			&SQLCounter{OracleName: "sql", URL: dsn, Query: `SELECT likes FROM snap_posts WHERE id = 'p'`},
			&SQLEffects{OracleName: "ledger", URL: dsn, Grouped: `SELECT idempotency_key, count(*) FROM snap_payments GROUP BY 1`},
		}
	}
	saved := map[string]json.RawMessage{}
	for _, o := range build() {
		if err := o.Before(ctx); err != nil {
			t.Fatalf("%s: Before: %v", o.Name(), err)
		}
		raw, err := SaveBefore(o)
		if err != nil || string(raw) == "null" {
			t.Fatalf("%s: SaveBefore = %s, %v; want a reading", o.Name(), raw, err)
		}
		saved[o.Name()] = raw
	}
	// the load
	if err := rdb.IncrBy(ctx, "likes:snap", 3).Err(); err != nil {
		t.Fatal(err)
	}
	pgExec(t, dsn, `UPDATE snap_posts SET likes = 9 WHERE id = 'p'`,
		`INSERT INTO snap_payments VALUES ('old'), ('k1')`)
	h := &history.History{Ops: []history.Op{{ID: 0, Key: "k1"}}}
	for _, o := range build() { // the judge's process
		if err := LoadBefore(o, saved[o.Name()]); err != nil {
			t.Fatalf("%s: LoadBefore: %v", o.Name(), err)
		}
		r, err := o.Observe(ctx, h)
		if err != nil {
			t.Fatalf("%s: Observe: %v", o.Name(), err)
		}
		switch o.Name() {
		case "redis":
			if *r.Before != 10 || *r.After != 13 {
				t.Errorf("redis before %d after %d, want 10 and 13", *r.Before, *r.After)
			}
		case "sql":
			if *r.Before != 4 || *r.After != 9 {
				t.Errorf("sql before %d after %d, want 4 and 9", *r.Before, *r.After)
			}
		case "ledger":
			if r.Strangers != 1 || r.Effects["k1"] != 1 {
				t.Errorf("ledger reading %+v: want k1's effect and the stranger old (grown from its reading before)", r)
			}
		}
	}
}
