package runner

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/scenarios"
)

// mintingServer mints a key for every request that carries none it
// minted, and answers it in the Idempotency-Key header (inHeader) or the
// body's idempotency_key; the first answer to each minted key is 503, so
// that the op is retried. It records the key each request carried.
type mintingServer struct {
	mu    sync.Mutex
	n     int
	tried map[string]bool
}

func (m *mintingServer) answer(inHeader bool) func(w http.ResponseWriter, r *http.Request, _ int64, _ []byte) {
	return func(w http.ResponseWriter, r *http.Request, _ int64, _ []byte) {
		m.mu.Lock()
		key := r.Header.Get("Idempotency-Key")
		if !strings.HasPrefix(key, "mk-") {
			m.n++
			key = fmt.Sprintf("mk-%d", m.n)
		}
		status := http.StatusCreated
		if !m.tried[key] {
			m.tried[key] = true
			status = http.StatusServiceUnavailable
		}
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if inHeader {
			w.Header().Set("Idempotency-Key", key)
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"idempotency_key":%q}`, key)
	}
}

// TestKeyFromAnswer: with operation.key.from_answer, the first attempt
// sends no key (or the op's own, when key.header names where), and every
// later attempt and replay the key the server answered; each answer's key
// is kept in the attempt's fields.
func TestKeyFromAnswer(t *testing.T) {
	for _, c := range []struct {
		name       string
		key        scenarios.KeyPlace
		inHeader   bool
		clientsKey bool
	}{
		{"header", scenarios.KeyPlace{FromAnswer: &scenarios.KeyFromAnswer{Header: "idempotency-key"}}, true, false},
		{"json", scenarios.KeyPlace{FromAnswer: &scenarios.KeyFromAnswer{JSON: "$.idempotency_key"}}, false, false},
		{"header, the client's key first", scenarios.KeyPlace{Header: "Idempotency-Key", FromAnswer: &scenarios.KeyFromAnswer{Header: "Idempotency-Key"}}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms := &mintingServer{tried: map[string]bool{}}
			s := newServer(t, ms.answer(c.inHeader))
			sc := scenario(func(sc *scenarios.Scenario) {
				sc.Load = scenarios.Load{Ops: 3, Concurrency: 1}
				sc.Operation.Key = c.key
				sc.Operation.Replay = &scenarios.Replay{Count: 1, After: scenarios.Duration(time.Millisecond)}
			})
			h := mustRun(t, s, sc, 3)
			reqs := s.requests()
			if len(reqs) != 9 || len(h.Attempts) != 9 {
				t.Fatalf("%d requests, %d attempts, want 9 (3 ops: 503, then 201, then a replay)", len(reqs), len(h.Attempts))
			}
			for op := range h.Ops {
				atts := h.AttemptsOf(op)
				minted := atts[0].Fields[history.MintedKeyField]
				if !strings.HasPrefix(minted, "mk-") {
					t.Errorf("op %d: attempt 1 fields %v, want the minted key", op, atts[0].Fields)
				}
				for _, a := range atts {
					if a.Fields[history.MintedKeyField] != minted {
						t.Errorf("op %d attempt %d: minted key %q, want %q (the server deduplicated it)", op, a.N, a.Fields[history.MintedKeyField], minted)
					}
					if c.inHeader && a.Headers["Idempotency-Key"] != minted {
						t.Errorf("op %d attempt %d: headers %v, want the minted key", op, a.N, a.Headers)
					}
				}
				got := h.MintedKeysOf(op)
				if !slices.Equal(got, []string{minted}) {
					t.Errorf("op %d: MintedKeys = %v, want [%s]", op, got, minted)
				}
			}
			// Each op's first attempt carries no key, or its own; its
			// retry and its replay carry the key the server minted.
			want := map[string]int{}
			for _, op := range h.Ops {
				first := ""
				if c.clientsKey {
					first = op.Key
				}
				want[first]++
				want[h.AttemptsOf(op.ID)[0].Fields[history.MintedKeyField]] += 2
			}
			if got := s.perKey(); !maps.Equal(got, want) {
				t.Errorf("requests per key = %v, want %v", got, want)
			}
		})
	}
}

// TestKeyFromAnswerNone: an answer that carries no key leaves the op on
// its own key, as without from_answer.
func TestKeyFromAnswerNone(t *testing.T) {
	s := newServer(t, nil)
	sc := scenario(func(sc *scenarios.Scenario) {
		sc.Load = scenarios.Load{Ops: 2, Concurrency: 1}
		sc.Operation.Key = scenarios.KeyPlace{Header: "Idempotency-Key", FromAnswer: &scenarios.KeyFromAnswer{Header: "Idempotency-Key"}}
		sc.Operation.Replay = &scenarios.Replay{Count: 1}
	})
	h := mustRun(t, s, sc, 3)
	// Each op's attempt and its replay carry its own key (a replay runs
	// beside the next op: the order of the requests is not the ops').
	got, want := map[string]int{}, map[string]int{}
	for _, r := range s.requests() {
		got[r.Key]++
	}
	for _, op := range h.Ops {
		want[op.Key] = 2
	}
	if !maps.Equal(got, want) {
		t.Errorf("requests per key = %v, want each op's own key twice: %v", got, want)
	}
	for _, a := range h.Attempts {
		if a.Fields != nil {
			t.Errorf("attempt %+v keeps fields, want none", a)
		}
	}
}
