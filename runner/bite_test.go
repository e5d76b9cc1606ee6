package runner

import (
	"net/http"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/scenarios"
)

// Every attempt says whether its fault bit: a timeout the answers beat
// never did, one shorter than the server's work did, a reset always does,
// and a clean attempt or a replay never does.
func TestAttemptsSayWhetherTheirFaultBit(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int64, _ []byte) {
		select {
		case <-time.After(100 * time.Millisecond):
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusCreated)
	})
	for _, c := range []struct {
		name  string
		fault scenarios.Fault
		bit   bool
	}{
		{"timeout beaten by every answer", scenarios.Fault{Kind: "timeout", Rate: 1, After: time.Second, Attempts: []int{1}}, false},
		// 20ms, not 1: a timeout that fires before the request is written
		// (a connection slow to open under -race) rightly does not bite
		{"timeout shorter than the work", scenarios.Fault{Kind: "timeout", Rate: 1, After: 20 * time.Millisecond, Attempts: []int{1}}, true},
		{"reset", scenarios.Fault{Kind: "reset", Rate: 1, Attempts: []int{1}}, true},
		{"duplicate", scenarios.Fault{Kind: "duplicate", Rate: 1, Copies: 2, Attempts: []int{1}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := scenario(func(sc *scenarios.Scenario) {
				sc.Load = scenarios.Load{Ops: 4, Concurrency: 2}
				sc.Faults = []scenarios.Fault{c.fault}
			})
			h := mustRun(t, s, sc, 1)
			for _, a := range h.Attempts {
				want := c.bit && a.N == 1
				if a.Bit != want || (a.N == 1) != (a.Fault == c.fault.Kind) {
					t.Errorf("attempt %d of op %d: fault %q, Bit %v; want fault on the first attempt only, Bit %v", a.N, a.Op, a.Fault, a.Bit, want)
				}
			}
		})
	}
}
