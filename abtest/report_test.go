package abtest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/reports"
)

// Report carries each arm's figures and the budget's verdict, and calls
// it unclear, the findings kept, when an arm did not hold the rate.
func TestReport(t *testing.T) {
	arm := func(name string, ops, acked int, lat ...int64) *Arm {
		return &Arm{Name: name, Ops: ops, Acked: acked, Scheduled: ops, Elapsed: 2 * time.Second, blocks: [][]int64{lat, lat}}
	}
	ds := []Delta{{Name: "p50", P: 50, MS: 2, Pct: 100, CI: [2]float64{1.5, 2.5}, CIPct: [2]float64{80, 120}}}
	budget := Budget{{Name: "p50", Value: 1}}
	res := &Result{Rate: 100, Rounds: 2, A: arm("a", 200, 200, 3000, 4000), B: arm("b", 200, 200, 1000, 2000)}
	got := Report("POST /a (A) and POST /b (B)", res, ds, budget)
	want := &reports.Bench{
		What: "POST /a (A) and POST /b (B)", Rate: 100, Rounds: 2,
		A:       reports.BenchArm{Name: "a", Ops: 200, OpsPerS: 100, P50: 3, P90: 4, P99: 4, P999: 4},
		B:       reports.BenchArm{Name: "b", Ops: 200, OpsPerS: 100, P50: 1, P90: 2, P99: 2, P999: 2},
		Deltas:  []reports.BenchDelta{{Name: "p50", MS: 2, Pct: 100, CI: [2]float64{1.5, 2.5}}},
		Verdict: string(Exceeded),
		Findings: []reports.BenchFinding{
			{Limit: "p50=1ms", Verdict: string(Exceeded), CI: [2]float64{1.5, 2.5}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Report (-want +got):\n%s", diff)
	}

	res.B = arm("b", 200, 100, 1000, 2000) // half the answers not 2xx
	got = Report("x", res, ds, budget)
	if got.Verdict != string(Unclear) || got.Reason == "" || len(got.Findings) != 1 {
		t.Errorf("Report of an arm that did not hold = %s (%q), %d findings; want unclear with the reason and the findings", got.Verdict, got.Reason, len(got.Findings))
	}

	// --baseline-no-key against an API that requires the key: B got no
	// 2xx, so no latency, no delta, no finding; the report says which arm
	// and why
	res.B = arm("b", 200, 0)
	res.B.FirstError = "status 400"
	got = Report("x", res, ds, budget)
	wantWhy := "arm B got no 2xx answer to any of its 200 ops (first: status 400): no latency to compare"
	if got.Verdict != string(Unclear) || len(got.Deltas) != 0 || len(got.Findings) != 0 || got.NoDelta != wantWhy || !got.B.No2xx || got.A.No2xx {
		t.Errorf("Report of an arm without a 2xx = %s, %d deltas, %d findings, no delta %q, no 2xx A %v B %v; want unclear, none, none, %q, false true",
			got.Verdict, len(got.Deltas), len(got.Findings), got.NoDelta, got.A.No2xx, got.B.No2xx, wantWhy)
	}
	if !strings.Contains(got.Reason, "arm b") {
		t.Errorf("Report of an arm without a 2xx: reason %q, want the arm named", got.Reason)
	}
	res.A, res.B = arm("a", 0, 0), arm("b", 200, 200, 1000)
	if got = Report("x", res, ds, budget); got.NoDelta != "arm A sent no op: no latency to compare" || len(got.Deltas) != 0 {
		t.Errorf("Report of an arm that sent nothing: no delta %q, %d deltas", got.NoDelta, len(got.Deltas))
	}
}
