package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// linkAPI creates customers (POST /customers, answering the token it was
// sent in X-Link-Token back in its body) and charges them idempotently
// (POST /customers/{id}/charges).
type linkAPI struct {
	mu        sync.Mutex
	customers int
	charges   map[string]string // key: answer
	reads     int               // POST /customers read
}

func (f *linkAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/customers":
		f.reads++
		f.customers++
		w.WriteHeader(201)
		fmt.Fprintf(w, `{"id":"cus %d","echo":%q}`, f.customers, r.Header.Get("X-Link-Token"))
	case strings.HasPrefix(r.URL.Path, "/customers/cus ") && strings.HasSuffix(r.URL.Path, "/charges"):
		k := r.Header.Get("Idempotency-Key")
		if f.charges[k] == "" {
			f.charges[k] = fmt.Sprintf(`{"id":"ch_%d"}`, len(f.charges)+1)
		}
		w.WriteHeader(201)
		io.WriteString(w, f.charges[k])
	default:
		w.WriteHeader(404)
	}
}

// customerLink is the link to POST /customers whose answer's id is the
// path's {customer}, sent with a secret in X-Link-Token.
func customerLink(base *url.URL, token string) Link {
	return Link{Param: "customer", What: "{customer} comes from createCustomer's answer",
		Build: func(ctx context.Context, _ func(string) string) (*http.Request, string, []byte, error) {
			body := []byte(`{"name":"a"}`)
			hr, err := http.NewRequestWithContext(ctx, http.MethodPost, base.String()+"/customers", strings.NewReader(string(body)))
			if err != nil {
				return nil, "", nil, err
			}
			hr.Header.Set("X-Link-Token", token)
			return hr, "", body, nil
		},
		Value: func(status int, _ http.Header, body []byte, whole bool) (string, error) {
			var v struct{ ID string }
			if status != 201 || !whole || json.Unmarshal(body, &v) != nil || v.ID == "" {
				return "", errors.New("no id")
			}
			return v.ID, nil
		}}
}

// TestLinks: an operation's link is sent first, once, as an op of
// history.CheckLinks, its value put (escaped) into the path the probes
// are sent to;
// the secret its request carried is scrubbed from its answer too; a link
// refused by the request cap is not counted as sent.
func TestLinks(t *testing.T) {
	t.Parallel()
	api := &linkAPI{charges: map[string]string{}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL)
	sc, err := scenarios.Parse("test", []byte(`name: audit
load: {ops: 1, concurrency: 1}
invariants: [{check: same_response}]
operation:
  path: /customers/{customer}/charges
  key: {header: Idempotency-Key}
  body: '{"amount":100}'
`))
	if err != nil {
		t.Fatal(err)
	}
	const token = "tok_5f0c9a7e31d2"
	a, err := New(Config{Scenario: sc, Targets: []*url.URL{base}, Checks: []string{"C03"}, Links: []Link{customerLink(base, token)}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h := res.History
	if h.Ops[0].Check != history.CheckLinks || len(h.AttemptsOf(0)) != 1 {
		t.Fatalf("op 0 = %+v, %d attempts; want the link, sent once", h.Ops[0], len(h.AttemptsOf(0)))
	}
	link := h.AttemptsOf(0)[0]
	if link.Status != 201 || link.Request == nil || !strings.HasSuffix(link.Request.URL, "/customers") || link.Label != "link, {customer}" {
		t.Errorf("the link's attempt = %+v", link)
	}
	b, _ := json.Marshal(h)
	if strings.Contains(string(b), token) {
		t.Errorf("the history holds the link's secret %s:\n%s", token, b)
	}
	for _, c := range res.Scorecard.Checks {
		if c.ID == "C03" && (c.Result != "pass" || !strings.Contains(h.Meta.Judge.Contract.URL, "/customers/cus%201/charges")) {
			t.Errorf("C03 %s (%s) on %s: want a pass on the linked customer's charges, its id escaped", c.Result, c.Summary, h.Meta.Judge.Contract.URL)
		}
	}
	if res.Scorecard.Requests != a.Sent() || api.reads != 1 {
		t.Errorf("%d requests in the scorecard, %d sent, %d links read; want the same, the link once", res.Scorecard.Requests, a.Sent(), api.reads)
	}

	// two links, room for one: the second is refused, and not counted
	two := []Link{customerLink(base, token), customerLink(base, token)}
	two[1].Param = "other"
	a, err = New(Config{Scenario: sc, Targets: []*url.URL{base}, Checks: []string{"C03"}, Links: two, MaxRequests: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "which failed") || a.Sent() != 1 {
		t.Errorf("over the cap: error %v, %d sent; want the second link failed, 1 sent", err, a.Sent())
	}
}
