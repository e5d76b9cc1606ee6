package trial

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// charges is a small payment API: POST /pay charges once per
// Idempotency-Key when idempotent, every time otherwise; GET /counts
// reports the charges per key.
type charges struct {
	idempotent bool
	status     int // when set, every POST is answered with it and charges nothing
	mu         sync.Mutex
	n          map[string]int
	seq        int
}

func (c *charges) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && c.status != 0:
		w.WriteHeader(c.status)
	case r.Method == http.MethodPost:
		key := r.Header.Get("Idempotency-Key")
		if !c.idempotent || c.n[key] == 0 {
			c.seq++
			c.n[key]++
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"key":%q}`, key)
	case r.URL.Path == "/counts":
		_ = json.NewEncoder(w).Encode(map[string]any{"counts": c.n})
	default:
		w.WriteHeader(http.StatusOK)
	}
}

const scenario = `name: pay
operation:
  method: POST
  path: /pay
  key: {header: Idempotency-Key}
  body: '{"amount": 100}'
load: {ops: 30, concurrency: 3}
retry: {attempts: 4, backoff: {initial: 1ms, max: 2ms}}
faults:
  - {kind: drop_ack, rate: 0.4}
quiet: 1ms
oracles:
  - name: ledger
    effects:
      bulk: {path: /counts, value: "$.counts"}
invariants:
  - {check: exactly_once, oracle: ledger}
  - {check: same_response}
`

func load(t *testing.T, text string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Parse("test.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}

func TestRunJudges(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		idempotent bool
		want       checks.Result
	}{{"naive", false, checks.NotMet}, {"idempotent", true, checks.Met}} {
		t.Run(c.name, func(t *testing.T) {
			url := serve(t, &charges{idempotent: c.idempotent, n: map[string]int{}})
			j, err := Run(context.Background(), load(t, scenario), Options{Target: url, Seed: 3, RunID: "r1"})
			if err != nil {
				t.Fatal(err)
			}
			if j.Judgement.Result != c.want || j.Err != nil {
				t.Fatalf("Run(%s) = %s (%s), err %v; want %s", c.name, j.Judgement.Result, j.Judgement.Why, j.Err, c.want)
			}
			m := j.History.Meta
			if m.RunID != "r1" || len(m.Judge.Invariants) != 2 || len(j.History.Readings) != 1 {
				t.Errorf("history meta %+v, %d readings: want the run id, the invariants and the reading", m, len(j.History.Readings))
			}
			// The saved history alone judges the same.
			var buf bytes.Buffer
			if err := history.Encode(&buf, j.History); err != nil {
				t.Fatal(err)
			}
			h, err := history.Decode(&buf)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Judge(h)
			if err != nil {
				t.Fatal(err)
			}
			if again.Judgement.Result != j.Judgement.Result || again.Judgement.Why != j.Judgement.Why {
				t.Errorf("Judge(decoded) = %s (%s), live %s (%s)", again.Judgement.Result, again.Judgement.Why, j.Judgement.Result, j.Judgement.Why)
			}
		})
	}
}

// A target that rejects every request is not met: nothing was judged.
func TestRunEveryAnswer401(t *testing.T) {
	t.Parallel()
	url := serve(t, &charges{status: http.StatusUnauthorized, n: map[string]int{}})
	j, err := Run(context.Background(), load(t, scenario), Options{Target: url, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if j.Judgement.Result != checks.Inconclusive {
		t.Errorf("Run(every answer 401) = %s (%s), want inconclusive", j.Judgement.Result, j.Judgement.Why)
	}
}

func TestPrepareErrors(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	_, err = Prepare(context.Background(), load(t, scenario), Options{Target: closed})
	var te *TargetError
	if !errors.As(err, &te) || !te.Loopback || te.NotHTTP {
		t.Errorf("Prepare(closed port) = %v, want a loopback *TargetError", err)
	}
	_, err = Prepare(context.Background(), load(t, scenario), Options{Target: "ftp://x"})
	if !errors.Is(err, ErrConfig) {
		t.Errorf("Prepare(ftp target) = %v, want ErrConfig", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	url := serve(t, &charges{n: map[string]int{}})
	if _, err = Prepare(ctx, load(t, scenario), Options{Target: url}); !errors.Is(err, context.Canceled) {
		t.Errorf("Prepare(cancelled) = %v, want context.Canceled", err)
	}
}
