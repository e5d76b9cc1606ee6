package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/clip"
	"github.com/idemcheck/idemcheck/internal/termsafe"
	"github.com/idemcheck/idemcheck/measure"
)

// WriteFunc renders summaries to w.
type WriteFunc func(w io.Writer, ss []*Summary) error

var writers = map[string]WriteFunc{
	"text":     WriteText,
	"json":     WriteJSON,
	"markdown": WriteMarkdown,
	"junit":    WriteJUnit,
	"html":     WriteHTML,
}

// Formats lists the report formats by name.
func Formats() []string {
	out := make([]string, 0, len(writers))
	for k := range writers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Writer returns the writer of a format.
func Writer(format string) (WriteFunc, error) {
	w, ok := writers[format]
	if !ok {
		return nil, fmt.Errorf("unknown report format %q: want one of %s", format, strings.Join(Formats(), ", "))
	}
	return w, nil
}

// WriteJSON writes one JSON document: a single summary as an object, several
// as {"format_version":1,"runs":[...]}.
func WriteJSON(w io.Writer, ss []*Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if len(ss) == 1 {
		return enc.Encode(ss[0])
	}
	if ss == nil {
		ss = []*Summary{}
	}
	return enc.Encode(struct {
		FormatVersion int        `json:"format_version"`
		Runs          []*Summary `json:"runs"`
	}{FormatVersion, ss})
}

var statusMark = map[checks.Status]string{checks.Pass: "PASS", checks.Fail: "FAIL", checks.Unknown: "UNKNOWN"}

// WriteText writes the terminal summary.
func WriteText(w io.Writer, ss []*Summary) error {
	ew := &errWriter{w: w}
	for i, s := range ss {
		if i > 0 {
			ew.printf("\n")
		}
		writeText(ew, s)
	}
	return ew.err
}

func writeText(w *errWriter, s *Summary) {
	if s.Result == Errored {
		w.printf("== %s ==\n", s.Scenario.Name)
		if s.Scenario.Target != "" {
			w.printf("target %s\n", s.Scenario.Target)
		}
		w.printf("result: COULD NOT RUN — %s\n", s.Error)
		return
	}
	w.printf("== %s (expect %s) ==\n", s.Scenario.Name, s.Scenario.Expect)
	if s.Scenario.Description != "" {
		w.printf("%s\n", oneLine(s.Scenario.Description))
	}
	w.printf("target %s  seed %d", s.Scenario.Target, s.Seed)
	if s.KeyNonce != 0 {
		w.printf("  key-nonce %d", s.KeyNonce)
	}
	if s.Interrupted {
		w.printf("  INTERRUPTED: partial run")
	}
	w.printf("\n")
	if s.Aborted != "" {
		w.printf("STOPPED EARLY %s into the load (abort_on_fail): %s\n", s.AbortedAt.Round(time.Millisecond), s.Aborted)
	}
	l := s.Load
	w.printf("ops %d (%.0f/s), attempts %d, retries %d, replays %d; acked %d, rejected %d, indeterminate %d, not sent %d\n",
		l.Ops, l.OpsPerSecond, l.Attempts, l.Retries, l.Replays, l.Acked, l.Rejected, l.Indeterminate, l.NotSent)
	for _, st := range s.Stages {
		w.printf("  %s\n", stageLine(st))
	}
	w.printf("faults: %s\n", faultList(s.Faults, s.Calibration, "none"))
	if c := calibrationLine(s.Calibration); c != "" {
		w.printf("calibration: %s\n", c)
	}
	for i, x := range s.Nemesis {
		w.printf("%s\n", nemesisLine(i+1, x))
	}
	if s.ConsumerCut != nil {
		w.printf("%s\n", consumerCutLine(s.ConsumerCut))
	}
	w.printf("answers: %s\n", countList(s.Statuses, "none"))
	for _, e := range s.Errors {
		w.printf("  transport error x%d: %s\n", e.Count, e.Name)
	}
	w.printf("latency     %9s %9s %9s %9s %9s\n", "p50", "p90", "p99", "p99.9", "max")
	for _, row := range []struct {
		name string
		p    Percentiles
	}{{"attempt", s.Latency.Attempt}, {"op", s.Latency.Op}} {
		w.printf("  %-9s %8.2fms %7.2fms %7.2fms %7.2fms %7.2fms  (n=%d)\n", row.name, row.p.P50, row.p.P90, row.p.P99, row.p.P999, row.p.Max, row.p.Count)
	}
	for _, v := range s.Verdicts {
		w.printf("%-7s %s%s: %s\n", statusMark[v.Status], v.Invariant, onOracle(v.Oracle), verdictLine(v))
		if l := attributionLine(v); l != "" {
			w.printf("        %s\n", l)
		}
		for i, ex := range v.Examples {
			if i == 3 {
				w.printf("        … %d more examples in report.json\n", len(v.Examples)-3)
				break
			}
			w.printf("        key %s", ex.Key)
			if ex.User != "" {
				w.printf(" (user %s)", ex.User)
			}
			w.printf(": %s\n", exampleProblem(ex))
			for _, a := range ex.Attempts {
				w.printf("          #%d %s\n", a.N, attemptLine(a))
			}
		}
	}
	for _, t := range s.Thresholds {
		mark := "ok"
		if !t.OK {
			mark = "EXCEEDED"
		}
		w.printf("threshold %s: %s %s\n", t.Name, quantityPair(t), mark)
	}
	for _, f := range s.Findings {
		w.printf("finding (%s) %s: %s\n", f.Severity, f.Check, f.Summary)
	}
	for _, x := range s.Warnings {
		w.printf("warning: %s\n", x)
	}
	w.printf("result: %s — %s\n", strings.ToUpper(strings.ReplaceAll(string(s.Result), "_", " ")), s.Why)
}

// quantityPair is "53.0 ms (limit 40 ms)".
func quantityPair(t checks.Threshold) string {
	return fmt.Sprintf("%s (limit %s)", quantity(t.Actual, t.Unit), quantity(t.Limit, t.Unit))
}

func verdictLine(v checks.Verdict) string {
	if v.Status == checks.Unknown && v.Reason != "" {
		return v.Reason
	}
	return v.Summary
}

func exampleProblem(ex checks.Example) string {
	p := ex.Problem
	if p == "" {
		p = fmt.Sprintf("%d effects, want %s", ex.Effects, ex.Want)
	}
	return p
}

// errWords is how many characters of an attempt's error its evidence line
// shows in text, Markdown and JUnit; report.json and the HTML report hold
// the whole error.
const errWords = 80

// attemptLine describes one attempt in a few words: fault, outcome or
// status, captured fields, latency; its error cut at a word to errWords
// characters.
func attemptLine(a history.Attempt) string { return attemptText(a, errWords) }

// attemptText is attemptLine with the error cut to n characters, or
// whole when n is 0.
func attemptText(a history.Attempt, n int) string {
	var b strings.Builder
	if a.Fault != "" {
		fmt.Fprintf(&b, "[%s] ", a.Fault)
	}
	if a.Outcome == history.OK {
		fmt.Fprintf(&b, "%d", a.Status)
	} else {
		b.WriteString(a.Outcome.String())
		if e := a.Err; e != "" {
			if n > 0 {
				e = clip.Words(e, n)
			}
			fmt.Fprintf(&b, " (%s)", e)
		}
	}
	for _, k := range sortedKeys(a.Fields) {
		fmt.Fprintf(&b, " %s=%s", k, a.Fields[k])
	}
	b.WriteString(headersText(a.Headers))
	fmt.Fprintf(&b, " in %.1fms", measure.MS(a.End-a.Start))
	return b.String()
}

// evidenceHeaders are the answer headers an attempt's evidence shows,
// when it kept them: how the server treated the key.
var evidenceHeaders = []string{"Idempotency-Key", "Idempotent-Replayed", "Location", "Retry-After"}

// headersText is " [Idempotency-Key: k, Retry-After: 1]" for the evidence
// headers among h, "" when it has none.
func headersText(h map[string]string) string {
	var parts []string
	for _, name := range evidenceHeaders {
		if v := h[name]; v != "" {
			parts = append(parts, name+": "+v)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " [" + strings.Join(parts, ", ") + "]"
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func countList(cs []measure.Count, empty string) string {
	if len(cs) == 0 {
		return empty
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s %d", c.Name, c.Count)
	}
	return strings.Join(parts, ", ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func onOracle(o string) string {
	if o == "" {
		return ""
	}
	return " on " + o
}

// errWriter writes a renderer's lines, keeping the first error. Every
// string and error argument is escaped (termsafe.Fprintf): what a target,
// a scenario or a saved history says reaches a terminal with its control
// characters, bidi controls and line separators shown, never obeyed; the
// format's own newlines are the only ones written.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err != nil {
		return
	}
	_, e.err = termsafe.Fprintf(e.w, format, args...)
}
