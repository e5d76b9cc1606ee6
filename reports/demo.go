package reports

import (
	"bytes"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/idemcheck/idemcheck/checks"
)

// Demo is what `idemcheck demo` reports: each built-in scenario's verdict
// with what was injected and what the state shows, and what the protection
// costs, A/B.
type Demo struct {
	Rows  []DemoRow
	Costs []DemoCost
	// Rate is the cost A/B's rate, ops per second per arm.
	Rate float64
	// Seed, KeyNonce and Out say how to rerun the demo and where its
	// reports are.
	Seed, KeyNonce uint64
	Out            string
}

// DemoRow is one scenario of the demo, run and judged.
type DemoRow struct {
	Pair    string // the protected scenario's name: "charges-lost-ack"
	Variant string // "naive" or "protected"
	Summary *Summary
	// Met says the run met its expectation; Inconclusive that it could
	// not tell. Neither: it missed a violation or broke a protection.
	Met, Inconclusive bool
	// ChargeCents is what each effect of the operation charges, in cents
	// (read from the scenario's request); 0 when it charges nothing.
	ChargeCents int64
}

// DemoCost is what the protection of one operation costs: the protected
// request (A) against the naive one (B).
type DemoCost struct {
	What string // "POST /charges vs POST /naive/charges"
	// A, B are the arms' figures; nil when not measured.
	A, B *BenchArm
	// Deltas are A − B per percentile: p50, p90, p99, p999.
	Deltas []BenchDelta
	// Err says why the cost was not measured, or why it is unclear (an
	// arm did not hold the rate).
	Err string
}

// WriteText writes d as tables for a terminal.
func (d *Demo) WriteText(w io.Writer) error {
	var out bytes.Buffer
	tw := tabwriter.NewWriter(&out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tVARIANT\tFAULTS BIT/PLANNED\tVERDICT\tEVIDENCE")
	for _, r := range d.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Pair, r.Variant, faultShort(r.Summary.Faults), r.verdict(), r.evidence())
	}
	tw.Flush()
	fmt.Fprintln(&out)
	fmt.Fprintf(&out, "What the protection costs (A/B at %.0f ops/s, blocks interleaved A B B A, no faults; Δ with its 95%% CI):\n", d.Rate)
	tw = tabwriter.NewWriter(&out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATION\tNAIVE p50\tPROTECTED p50\tOVERHEAD p50\tOVERHEAD p99")
	for _, c := range d.Costs {
		if c.A == nil || c.B == nil {
			fmt.Fprintf(tw, "%s\tnot measured: %s\n", c.What, c.Err)
			continue
		}
		p50, p99 := costText(c.Deltas[0]), costText(c.Deltas[2])
		if c.Err != "" {
			p99 += " (unclear: " + c.Err + ")"
		}
		fmt.Fprintf(tw, "%s\t%.2fms\t%.2fms\t%s\t%s\n", c.What, c.B.P50, c.A.P50, p50, p99)
	}
	tw.Flush()
	fmt.Fprintln(&out, "A short A/B: 'idemcheck bench overhead' measures longer, with a budget.")
	met := 0
	for _, r := range d.Rows {
		if r.Met {
			met++
		}
	}
	fmt.Fprintf(&out, "\n%d of %d expectations met (seed %d, key-nonce %d). Reports: %s/<scenario>/report.json (a naive variant's in <scenario>-naive/)\n", met, len(d.Rows), d.Seed, d.KeyNonce, d.Out)
	_, err := w.Write(out.Bytes())
	return err
}

// costText is a delta with its interval, or "within noise" when the
// interval holds 0.
func costText(d BenchDelta) string {
	if d.CI[0] <= 0 && d.CI[1] >= 0 {
		return fmt.Sprintf("within noise [%+.2f, %+.2f]ms", d.CI[0], d.CI[1])
	}
	return fmt.Sprintf("%+.2fms (%+.0f%%) [%+.2f, %+.2f]", d.MS, d.Pct, d.CI[0], d.CI[1])
}

func (r DemoRow) verdict() string {
	violation := r.Summary.Scenario.Expect == "violation"
	switch {
	case r.Met && violation:
		return "caught ✓"
	case r.Met:
		return "held ✓"
	case r.Inconclusive:
		return "inconclusive ?"
	case violation:
		return "MISSED ✗"
	}
	return "BROKEN ✗"
}

// evidence says in a few words what the state shows: of the first failed
// verdict, else of the first one.
func (r DemoRow) evidence() string {
	s := r.Summary
	var first *checks.Verdict
	for i := range s.Verdicts {
		v := &s.Verdicts[i]
		if first == nil || (v.Status == checks.Fail && first.Status != checks.Fail) {
			first = v
		}
	}
	if first == nil {
		return "no invariant checked"
	}
	v := first
	switch {
	case v.Status == checks.Unknown:
		return "could not decide: " + v.Reason
	case v.Counter != nil:
		c := v.Counter
		if c.Indeterminate > 0 {
			return fmt.Sprintf("likes %d → %d for %d–%d likes", c.Before, c.After, c.Acked, c.Acked+c.Indeterminate)
		}
		return fmt.Sprintf("likes %d → %d for %d likes", c.Before, c.After, c.Acked)
	case v.Invariant == checks.ConditionalUpdate && v.Status == checks.Fail && v.Extra > 0:
		return fmt.Sprintf("%d of %d debits applied more than once (%d extra)", v.Violations, v.Checked, v.Extra)
	case v.Invariant == checks.ConditionalUpdate && v.Status == checks.Pass:
		return fmt.Sprintf("balance = initial − Σ applied; %d debits, none applied twice", v.Checked)
	case r.ChargeCents > 0 && (v.Invariant == checks.AtMostOnce || v.Invariant == checks.ExactlyOnce):
		if v.Status == checks.Fail {
			if v.Missing > 0 && v.Extra == 0 {
				return fmt.Sprintf("%d of %d acknowledged charges missing from the %s", v.Missing, v.Checked, v.Oracle)
			}
			return fmt.Sprintf("%d of %d customers charged more than once at the %s: %d extra charges, %s taken too much",
				v.Violations, v.Checked, v.Oracle, v.Extra, dollars(int64(v.Extra)*r.ChargeCents))
		}
		return fmt.Sprintf("%d customers, each charged at most once (%d indeterminate)", v.Checked, v.Indeterminate)
	}
	return v.Summary
}

func dollars(cents int64) string { return fmt.Sprintf("$%d.%02d", cents/100, cents%100) }
