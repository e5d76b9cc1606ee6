package audit

import (
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/scenarios"
)

// A request sent without a key has no key field when the key goes in the
// body: an API that requires the field rejects it (C01 passes), and it
// was processed with the op's key before.
func TestNoKeyLeavesOutTheKeyField(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		if !strings.Contains(string(b), `"op_id"`) {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"op_id is required"}`))
			return
		}
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"id":"post_1","likes":1}`))
	}))
	defer srv.Close()
	sc, err := scenarios.Parse("test", []byte(`name: audit
load: {ops: 1, concurrency: 1}
invariants: [{check: same_response}]
operation:
  path: /posts/p1/like
  key: {body_field: op_id}
  body: '{"op_id":"stale","note":"n{{.Seq}}"}'
`))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL)
	res := runAudit(t, Config{Scenario: sc, Targets: []*url.URL{u}, Checks: []string{"C01"}, Quiet: time.Millisecond, Rand: rand.New(rand.NewPCG(1, 2))})
	c := res.Scorecard.Checks[0]
	if c.ID != "C01" || c.Result != checks.Pass {
		t.Errorf("C01 %s: %s", c.Result, c.Summary)
	}
	last := bodies[len(bodies)-1]
	if strings.Contains(last, "op_id") || !strings.Contains(last, `"note"`) {
		t.Errorf("the request without a key sent %s: want the body without its key field", last)
	}
}
