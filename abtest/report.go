package abtest

import (
	"fmt"
	"strings"

	"github.com/idemcheck/idemcheck/reports"
)

// Report is what bench overhead reports of res: both arms' figures, the
// deltas ds and b's verdict on them, unclear when an arm did not hold the
// rate. An arm that got no 2xx answer has no latency: then there is no
// delta, and the report says which arm and why. what names the arms.
func Report(what string, res *Result, ds []Delta, b Budget) *reports.Bench {
	r := &reports.Bench{What: what, Rate: res.Rate, Rounds: res.Rounds, A: res.A.Report(), B: res.B.Report()}
	if r.NoDelta = noDelta(res); r.NoDelta != "" {
		_, why := res.Held()
		r.Verdict, r.Reason = string(Unclear), why
		return r
	}
	r.Deltas = ReportDeltas(ds)
	v, fs := Judge(ds, b)
	r.Verdict = string(v)
	for _, f := range fs {
		r.Findings = append(r.Findings, reports.BenchFinding{Limit: f.Limit.String(), Pct: f.Limit.Pct, Verdict: string(f.Verdict), CI: f.CI})
	}
	if ok, why := res.Held(); !ok {
		r.Verdict, r.Reason = string(Unclear), why
	}
	return r
}

// noDelta says which arms got no 2xx answer, and so have no latency to
// compare; "" when both have one.
func noDelta(res *Result) string {
	var parts []string
	for _, a := range res.Arms() {
		switch {
		case a.Ops == 0:
			parts = append(parts, fmt.Sprintf("arm %s sent no op", strings.ToUpper(a.Name)))
		case a.Acked == 0:
			parts = append(parts, fmt.Sprintf("arm %s got no 2xx answer to any of its %d ops (first: %s)", strings.ToUpper(a.Name), a.Ops, a.FirstError))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + ": no latency to compare"
}

// Report is a's figures as reports show them.
func (a *Arm) Report() reports.BenchArm {
	return reports.BenchArm{Name: a.Name, Ops: a.Ops, OpsPerS: a.OpsPerSecond(), No2xx: a.Acked == 0,
		P50: a.Percentile(50), P90: a.Percentile(90), P99: a.Percentile(99), P999: a.Percentile(99.9)}
}

// ReportDeltas are ds as reports show them.
func ReportDeltas(ds []Delta) []reports.BenchDelta {
	out := make([]reports.BenchDelta, len(ds))
	for i, d := range ds {
		out[i] = reports.BenchDelta{Name: d.Name, MS: d.MS, Pct: d.Pct, CI: d.CI}
	}
	return out
}
