package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/idemcheck/idemcheck/internal/termsafe"
)

// Bench is what `bench overhead` reports: the same operation with (A) and
// without (B) its idempotency layer, A/B, and the budget's verdict, already
// decided.
type Bench struct {
	// What names the two arms: "POST /charges (A) and POST /naive/charges (B)".
	What   string
	Rate   float64 // ops per second per arm
	Rounds int     // measured rounds, each a block of A and a block of B
	A, B   BenchArm
	// Deltas are A − B per percentile: p50, p90, p99, p999.
	Deltas []BenchDelta
	// Verdict is within, exceeded or unclear.
	Verdict  string
	Findings []BenchFinding // one per limit of the budget
	// Reason says why the verdict is unclear when an arm did not hold the
	// rate; "" otherwise.
	Reason string
	// MaxA, MaxB are the rates each arm sustained (--rate auto); 0 when
	// not searched.
	MaxA, MaxB float64
	// NoDelta says which arm got no 2xx answer, and so has no latency to
	// compare, when there is no A − B (Deltas is then empty); "" otherwise.
	NoDelta string
}

// BenchArm is one arm's figures; latencies in ms.
type BenchArm struct {
	Name                string // "a" or "b"
	Ops                 int
	OpsPerS             float64
	P50, P90, P99, P999 float64
	// No2xx is true when not one of the arm's ops got a 2xx answer: its
	// percentiles measure nothing and are not shown.
	No2xx bool
}

// BenchDelta is A − B at one percentile, with its 95% confidence
// interval.
type BenchDelta struct {
	Name string     // "p50"
	MS   float64    // A − B, ms
	Pct  float64    // (A − B) / B × 100
	CI   [2]float64 // of MS
}

// BenchFinding is one limit of the budget, judged.
type BenchFinding struct {
	Limit   string // as written: "p50=30%", "p99=5ms"
	Pct     bool   // the limit is in % of B, not in ms
	Verdict string
	CI      [2]float64 // the interval compared, in the limit's unit
}

// JSON shapes of bench overhead (format_version 1).
type (
	benchJSON struct {
		FormatVersion int              `json:"format_version"`
		Rate          float64          `json:"rate"`
		Arms          benchArmsJSON    `json:"arms"`
		Delta         *benchDeltasJSON `json:"delta,omitempty"`
		NoDelta       string           `json:"no_delta,omitempty"`
		Verdict       string           `json:"verdict"`
		Reason        string           `json:"reason,omitempty"`
	}
	benchArmsJSON struct {
		A benchArmJSON `json:"a"`
		B benchArmJSON `json:"b"`
	}
	benchArmJSON struct {
		Ops     int     `json:"ops"`
		OpsPerS float64 `json:"ops_per_s"`
		P50     float64 `json:"p50_ms"`
		P90     float64 `json:"p90_ms"`
		P99     float64 `json:"p99_ms"`
		P999    float64 `json:"p999_ms"`
		No2xx   bool    `json:"no_2xx,omitempty"`
	}
	benchDeltasJSON struct {
		P50  benchDeltaJSON `json:"p50"`
		P90  benchDeltaJSON `json:"p90"`
		P99  benchDeltaJSON `json:"p99"`
		P999 benchDeltaJSON `json:"p999"`
	}
	benchDeltaJSON struct {
		MS   float64    `json:"ms"`
		Pct  float64    `json:"pct"`
		CI95 [2]float64 `json:"ci95_ms"`
	}
)

// r3 rounds to 3 decimals (µs for ms figures).
func r3(x float64) float64 { return math.Round(x*1000) / 1000 }

func (a BenchArm) json() benchArmJSON {
	return benchArmJSON{Ops: a.Ops, OpsPerS: r3(a.OpsPerS), P50: r3(a.P50), P90: r3(a.P90), P99: r3(a.P99), P999: r3(a.P999), No2xx: a.No2xx}
}

func (d BenchDelta) json() benchDeltaJSON {
	return benchDeltaJSON{MS: r3(d.MS), Pct: math.Round(d.Pct*10) / 10, CI95: [2]float64{r3(d.CI[0]), r3(d.CI[1])}}
}

func (b *Bench) json() benchJSON {
	j := benchJSON{FormatVersion: 1, Rate: b.Rate, Verdict: b.Verdict, Reason: b.Reason, NoDelta: b.NoDelta, Arms: benchArmsJSON{A: b.A.json(), B: b.B.json()}}
	if b.NoDelta == "" {
		j.Delta = &benchDeltasJSON{}
	}
	for _, d := range b.Deltas {
		if j.Delta == nil {
			break
		}
		switch d.Name {
		case "p50":
			j.Delta.P50 = d.json()
		case "p90":
			j.Delta.P90 = d.json()
		case "p99":
			j.Delta.P99 = d.json()
		case "p999":
			j.Delta.P999 = d.json()
		}
	}
	return j
}

// WriteJSON writes b as one JSON document (format_version 1); without an
// A − B, "delta" is left out and "no_delta" says why.
func (b *Bench) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(b.json())
}

// WriteText writes b as tables for a terminal.
func (b *Bench) WriteText(w io.Writer) error {
	var out bytes.Buffer
	termsafe.Fprintf(&out, "A/B of %s\n", b.What)
	fmt.Fprintf(&out, "%.0f ops/s per arm, %d rounds A B B A, latency from the intended start\n", b.Rate, b.Rounds)
	if b.MaxA > 0 {
		fmt.Fprintf(&out, "highest sustained rate: A %.0f ops/s, B %.0f ops/s (A is %.0f%% of B)\n", b.MaxA, b.MaxB, pctOf(b.MaxA, b.MaxB))
	}
	fmt.Fprintln(&out)
	tw := tabwriter.NewWriter(&out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ARM\tOPS\tOPS/S\tp50\tp90\tp99\tp99.9")
	for _, a := range []BenchArm{b.A, b.B} {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%s\t%s\n", strings.ToUpper(a.Name), a.Ops, a.OpsPerS, a.ms(a.P50, "ms"), a.ms(a.P90, "ms"), a.ms(a.P99, "ms"), a.ms(a.P999, "ms"))
	}
	tw.Flush()
	fmt.Fprintln(&out)
	if b.NoDelta != "" {
		fmt.Fprintf(&out, "A − B: none, %s\n", b.NoDelta)
	} else {
		tw = tabwriter.NewWriter(&out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "A − B\tOVERHEAD")
		for _, d := range b.Deltas {
			fmt.Fprintf(tw, "%s\t%s\n", d.Name, d.text())
		}
		tw.Flush()
	}
	fmt.Fprintln(&out)
	termsafe.Fprintf(&out, "verdict: %s%s\n", b.Verdict, b.findingsText())
	_, err := w.Write(out.Bytes())
	return err
}

// WriteMarkdown writes b for a CI step summary or a pull request comment.
// Write writes b in format: "json", "markdown", else text.
func (b *Bench) Write(w io.Writer, format string) error {
	switch format {
	case "json":
		return b.WriteJSON(w)
	case "markdown":
		return b.WriteMarkdown(w)
	}
	return b.WriteText(w)
}

func (b *Bench) WriteMarkdown(w io.Writer) error {
	var out bytes.Buffer
	fmt.Fprintf(&out, "### Idempotency overhead: %s\n\n", b.Verdict)
	termsafe.Fprintf(&out, "A/B of %s at %.0f ops/s per arm, %d rounds (A B B A), latency from the intended start.\n\n", b.What, b.Rate, b.Rounds)
	fmt.Fprintln(&out, "| arm | ops | ops/s | p50 | p90 | p99 | p99.9 |")
	fmt.Fprintln(&out, "|---|---:|---:|---:|---:|---:|---:|")
	for _, a := range []BenchArm{b.A, b.B} {
		fmt.Fprintf(&out, "| %s | %d | %.0f | %s | %s | %s | %s |\n", strings.ToUpper(a.Name), a.Ops, a.OpsPerS, a.ms(a.P50, " ms"), a.ms(a.P90, " ms"), a.ms(a.P99, " ms"), a.ms(a.P999, " ms"))
	}
	fmt.Fprintln(&out)
	if b.NoDelta != "" {
		fmt.Fprintf(&out, "No A − B: %s.\n", md(b.NoDelta))
	} else {
		fmt.Fprintln(&out, "| A − B | ms | % | 95% CI (ms) |")
		fmt.Fprintln(&out, "|---|---:|---:|---|")
		for _, d := range b.Deltas {
			fmt.Fprintf(&out, "| %s | %+.2f | %+.0f%% | [%+.2f, %+.2f] |\n", d.Name, d.MS, d.Pct, d.CI[0], d.CI[1])
		}
	}
	termsafe.Fprintf(&out, "\nVerdict: **%s**%s\n", b.Verdict, b.findingsText())
	_, err := w.Write(out.Bytes())
	return err
}

// ms is a latency of the arm, "1.31ms", or "–" when the arm got no 2xx
// answer and so measured none.
func (a BenchArm) ms(v float64, unit string) string {
	if a.No2xx {
		return "–"
	}
	return fmt.Sprintf("%.2f%s", v, unit)
}

// text is "+0.41ms (+35%)  95% CI [+0.30, +0.52] ms", and "within noise"
// when the interval holds 0.
func (d BenchDelta) text() string {
	s := fmt.Sprintf("%+.2fms (%+.0f%%)  95%% CI [%+.2f, %+.2f] ms", d.MS, d.Pct, d.CI[0], d.CI[1])
	if d.CI[0] <= 0 && d.CI[1] >= 0 {
		s += "  within noise"
	}
	return s
}

func (b *Bench) findingsText() string {
	if b.Reason != "" {
		return " (" + b.Reason + ")"
	}
	if len(b.Findings) == 0 {
		return " (no --max-overhead budget)"
	}
	var parts []string
	for _, f := range b.Findings {
		unit := "ms"
		if f.Pct {
			unit = "%"
		}
		parts = append(parts, fmt.Sprintf("%s: %s, CI [%.2f, %.2f]%s", f.Limit, f.Verdict, f.CI[0], f.CI[1], unit))
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// pctOf is a in % of b; 0 when b is 0.
func pctOf(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b * 100
}
