package oracles

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// A node list of keys counts one effect per node: the list endpoint of an
// ordinary API, one record per effect.
func TestHTTPEffectsNodeList(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/charges":
			fmt.Fprint(w, `{"data":[{"idempotency_key":"k1"},{"idempotency_key":"k2"},{"idempotency_key":"k2"},{"idempotency_key":"other"},{"id":7}]}`)
		case "/empty":
			fmt.Fprint(w, `{"data":[]}`)
		case "/bad":
			fmt.Fprint(w, `{"data":[{"idempotency_key":{"k":1}}]}`)
		}
	}))
	defer srv.Close()
	h := keysHistory("k1", "k2", "k3")
	read := func(path string) (map[string]int, error) {
		obs, err := (&HTTPEffects{OracleName: "ledger", Bulk: get(srv.URL, path), Value: "$.data[*].idempotency_key"}).Observe(context.Background(), h)
		if err != nil {
			return nil, err
		}
		return obs.Effects, nil
	}
	got, err := read("/charges")
	if diff := cmp.Diff(map[string]int{"k1": 1, "k2": 2}, got); err != nil || diff != "" {
		t.Errorf("Observe(node list) = %v (-want +got):\n%s", err, diff)
	}
	if got, err := read("/empty"); err != nil || len(got) != 0 {
		t.Errorf("Observe(no nodes) = %v, %v, want no effects and no error", got, err)
	}
	if _, err := read("/bad"); !errors.Is(err, ErrType) || !strings.Contains(err.Error(), "node 0") {
		t.Errorf("Observe(a node that is no key) = %v, want ErrType naming node 0", err)
	}
	// A singular path selecting nothing is still an error, never 0 effects.
	_, err = (&HTTPEffects{OracleName: "ledger", Bulk: get(srv.URL, "/charges"), Value: "$.counts"}).Observe(context.Background(), h)
	if !errors.Is(err, ErrNoMatch) {
		t.Errorf("Observe($.counts absent) = %v, want ErrNoMatch", err)
	}
}

// pagedServer serves /charges in pages of two keys, linked by next_page_url
// (relative or absolute) and by next_cursor.
func pagedServer(t *testing.T, keys []string) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Authorization") != "Bearer s3cret-token" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		page := 0
		if c := r.URL.Query().Get("cursor"); c != "" {
			fmt.Sscanf(c, "c%d", &page)
		}
		if p := r.URL.Query().Get("page"); p != "" {
			fmt.Sscanf(p, "%d", &page)
		}
		lo, hi := page*2, min(page*2+2, len(keys))
		var items []string
		for _, k := range keys[lo:hi] {
			items = append(items, fmt.Sprintf(`{"idempotency_key":%q}`, k))
		}
		next, cursor := "null", "null"
		if hi < len(keys) {
			if page%2 == 0 {
				next = fmt.Sprintf(`"/charges?page=%d"`, page+1)
			} else {
				next = fmt.Sprintf(`"%s/charges?page=%d"`, srv.URL, page+1)
			}
			cursor = fmt.Sprintf(`"c%d"`, page+1)
		}
		if r.URL.Path == "/loop" {
			next = `"/loop?page=1"`
		}
		if r.URL.Path == "/away" {
			next = `"http://elsewhere.invalid/charges?page=1"`
		}
		fmt.Fprintf(w, `{"data":[%s],"next_page_url":%s,"next_cursor":%s}`, strings.Join(items, ","), next, cursor)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestHTTPEffectsPages(t *testing.T) {
	keys := []string{"k1", "k2", "k2", "k3", "other", "k1", "k4"} // 4 pages
	srv, hits := pagedServer(t, keys)
	h := keysHistory("k1", "k2", "k3", "k4", "k5")
	want := map[string]int{"k1": 2, "k2": 2, "k3": 1, "k4": 1}
	for _, pg := range []Pages{
		{Next: "$.next_page_url"},
		{Cursor: "$.next_cursor", Param: "cursor"},
		{Next: "$.next_page_url", MaxPages: 4},
	} {
		hits.Store(0)
		o := &HTTPEffects{OracleName: "ledger", Bulk: get(srv.URL, "/charges"), Value: "$.data[*].idempotency_key", Pages: pg}
		obs, err := o.Observe(context.Background(), h)
		if err != nil {
			t.Fatalf("Observe(%+v) = %v", pg, err)
		}
		if diff := cmp.Diff(want, obs.Effects); diff != "" {
			t.Errorf("Observe(%+v).Effects (-want +got):\n%s", pg, diff)
		}
		if n := hits.Load(); n != 4 {
			t.Errorf("Observe(%+v) read %d pages, want 4", pg, n)
		}
	}

	for _, tt := range []struct {
		name, path string
		pages      Pages
		want       error
		text       string
	}{
		{"bounded", "/charges", Pages{Next: "$.next_page_url", MaxPages: 3}, ErrTooManyPages, "3 pages read"},
		{"a loop", "/loop", Pages{Next: "$.next_page_url"}, nil, "the pages loop"},
		{"another host", "/away", Pages{Next: "$.next_page_url"}, nil, "leaves"},
	} {
		o := &HTTPEffects{OracleName: "ledger", Bulk: get(srv.URL, tt.path), Value: "$.data[*].idempotency_key", Pages: tt.pages}
		_, err := o.Observe(context.Background(), h)
		if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("%s: Observe = %v, want an error with %q", tt.name, err, tt.text)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: error %q shows the token", tt.name, err)
		}
	}

	// The whole read is bounded by ctx.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := &HTTPEffects{OracleName: "ledger", Bulk: get(srv.URL, "/charges"), Value: "$.data[*].idempotency_key", Pages: Pages{Next: "$.next_page_url"}}
	if _, err := o.Observe(ctx, h); !errors.Is(err, context.Canceled) {
		t.Errorf("Observe(cancelled) = %v, want context.Canceled", err)
	}
}

// across: sum reads every target and adds the counts up; across: first
// reads the first target only.
func TestFromScenarioAcross(t *testing.T) {
	serve := func(body string) *url.URL {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) }))
		t.Cleanup(srv.Close)
		u, _ := url.Parse(srv.URL)
		return u
	}
	a, b := serve(`{"counts":{"k1":1}}`), serve(`{"counts":{"k1":1,"k2":1}}`)
	h := keysHistory("k1", "k2")
	for _, tt := range []struct {
		across string
		want   map[string]int
	}{{scenarios.AcrossFirst, map[string]int{"k1": 1}}, {scenarios.AcrossSum, map[string]int{"k1": 2, "k2": 1}}} {
		src := `name: t
operation: {path: /c, key: {header: Idempotency-Key}}
load: {ops: 1, concurrency: 1}
oracles:
  - name: ledger
    effects:
      bulk: {path: /counts, value: $.counts}
      across: ` + tt.across + `
invariants: [{check: exactly_once, oracle: ledger}]
`
		sc, err := scenarios.Parse("t.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		os, err := FromScenarioTargets(sc, []*url.URL{a, b}, nil, 0, nil)
		if err != nil || len(os) != 1 {
			t.Fatalf("FromScenarioTargets = %v, %v", os, err)
		}
		obs, err := os[0].Observe(context.Background(), h)
		if err != nil {
			t.Fatalf("%s: Observe = %v", tt.across, err)
		}
		if diff := cmp.Diff(tt.want, obs.Effects); diff != "" || obs.Kind != history.KindEffects {
			t.Errorf("across %s: Effects (-want +got):\n%s", tt.across, diff)
		}
	}
}
