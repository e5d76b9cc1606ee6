package metrics

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/reports"
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

// TestJudgedNotRun checks the result of a scenario that could not run:
// error, beside met, not_met and inconclusive at 0.
func TestJudgedNotRun(t *testing.T) {
	m := New()
	m.Judged(reports.NotRun("idemcheck v1.0.0", "pay", "http://api:8080", time.Now(), errors.New("target unreachable")), nil)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	s := scrape(t, srv.URL)
	s.has(t, "idemcheck_run_result", `result="error",scenario="pay"`, 1)
	for _, r := range []string{"met", "not_met", "inconclusive"} {
		s.has(t, "idemcheck_run_result", `result="`+r+`",scenario="pay"`, 0)
	}
	s.has(t, "idemcheck_run_info", `scenario="pay",version="v1.0.0"`, 1)
	if n := s.count("idemcheck_result"); n != 0 {
		t.Errorf("a scenario that did not run has %d idemcheck_result series, want none", n)
	}
}
