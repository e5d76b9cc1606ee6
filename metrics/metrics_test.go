package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
)

func TestMetrics(t *testing.T) {
	m := New()
	o := m.Observer("pay")
	o.Start(3, 0)
	o.AttemptDone(history.Attempt{Outcome: history.OK, Status: 201, Intended: 0, End: 3 * time.Millisecond})
	o.AttemptDone(history.Attempt{Outcome: history.Info, Fault: "drop_ack"})
	o.AttemptDone(history.Attempt{Outcome: history.OK, Status: 201})
	o.OpDone(0, history.Acked)
	o.OpDone(1, history.Indeterminate)
	m.Verdicts("pay", []checks.Verdict{{Invariant: "exactly_once", Violations: 2}, {Invariant: "same_response"}})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	for _, want := range []string{
		`idemcheck_attempts_total{fault="",outcome="ok",scenario="pay",status="201"} 2`,
		`idemcheck_attempts_total{fault="drop_ack",outcome="info",scenario="pay",status=""} 1`,
		`idemcheck_attempt_latency_seconds_count{scenario="pay"} 2`,
		`idemcheck_ops_total{scenario="pay",state="acked"} 1`,
		`idemcheck_violations{invariant="exactly_once",scenario="pay"} 2`,
		`idemcheck_violations{invariant="same_response",scenario="pay"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
}
