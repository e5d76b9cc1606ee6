package reports

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/measure"
)

// WriteFunc renders summaries to w.
type WriteFunc func(w io.Writer, ss []*Summary) error

var writers = map[string]WriteFunc{
	"text":     WriteText,
	"json":     WriteJSON,
	"markdown": WriteMarkdown,
	"junit":    WriteJUnit,
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

// ReadJSON reads one summary written by WriteJSON.
func ReadJSON(r io.Reader) (*Summary, error) {
	var s Summary
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return nil, fmt.Errorf("reading report: %w", err)
	}
	if s.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("report format_version %d, this idemcheck reads %d", s.FormatVersion, FormatVersion)
	}
	return &s, nil
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
	l := s.Load
	w.printf("ops %d (%.0f/s), attempts %d, retries %d, replays %d; acked %d, rejected %d, indeterminate %d, not sent %d\n",
		l.Ops, l.OpsPerSecond, l.Attempts, l.Retries, l.Replays, l.Acked, l.Rejected, l.Indeterminate, l.NotSent)
	w.printf("faults injected: %s\n", countList(s.Faults, "none"))
	w.printf("answers: %s\n", countList(s.Statuses, "none"))
	for _, e := range s.Errors {
		w.printf("  transport error x%d: %s\n", e.Count, e.Name)
	}
	w.printf("latency     %9s %9s %9s %9s %9s\n", "p50", "p90", "p99", "p99.9", "max")
	for _, row := range []struct {
		name string
		p    measure.Percentiles
	}{{"attempt", s.Latency.Attempt}, {"op", s.Latency.Op}} {
		w.printf("  %-9s %8.2fms %7.2fms %7.2fms %7.2fms %7.2fms  (n=%d)\n", row.name, row.p.P50, row.p.P90, row.p.P99, row.p.P999, row.p.Max, row.p.Count)
	}
	for _, v := range s.Verdicts {
		w.printf("%-7s %s%s: %s\n", statusMark[v.Status], v.Invariant, onOracle(v.Oracle), verdictLine(v))
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
		w.printf("threshold %s: %.3g %s (limit %.3g) %s\n", t.Name, t.Actual, t.Unit, t.Limit, mark)
	}
	for _, f := range s.Findings {
		w.printf("finding (%s) %s: %s\n", f.Severity, f.Check, f.Summary)
	}
	w.printf("result: %s — %s\n", strings.ToUpper(strings.ReplaceAll(string(s.Result), "_", " ")), s.Why)
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

// attemptLine describes one attempt in a few words: fault, outcome or
// status, captured fields, latency.
func attemptLine(a history.Attempt) string {
	var b strings.Builder
	if a.Fault != "" {
		fmt.Fprintf(&b, "[%s] ", a.Fault)
	}
	if a.Outcome == history.OK {
		fmt.Fprintf(&b, "%d", a.Status)
	} else {
		b.WriteString(a.Outcome.String())
		if a.Err != "" {
			fmt.Fprintf(&b, " (%s)", trim(a.Err, 80))
		}
	}
	if len(a.Fields) > 0 {
		keys := make([]string, 0, len(a.Fields))
		for k := range a.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%s", k, a.Fields[k])
		}
	}
	fmt.Fprintf(&b, " in %.1fms", measure.MS(a.End-a.Start))
	return b.String()
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

// WriteMarkdown writes a CI step summary / PR comment.
func WriteMarkdown(w io.Writer, ss []*Summary) error {
	ew := &errWriter{w: w}
	ew.printf("| scenario | expect | result | invariants | op p50 | op p99 | ops |\n|---|---|---|---|---|---|---|\n")
	for _, s := range ss {
		var inv []string
		for _, v := range s.Verdicts {
			inv = append(inv, fmt.Sprintf("%s %s", v.Invariant, statusMark[v.Status]))
		}
		ew.printf("| %s | %s | %s | %s | %.2f ms | %.2f ms | %d |\n", s.Scenario.Name, s.Scenario.Expect, s.Result,
			strings.Join(inv, ", "), s.Latency.Op.P50, s.Latency.Op.P99, s.Load.Ops)
	}
	for _, s := range ss {
		for _, f := range s.Findings {
			ew.printf("\n**%s — finding (%s)** %s: %s\n", s.Scenario.Name, f.Severity, f.Check, f.Summary)
		}
		for _, v := range s.Verdicts {
			if v.Status == checks.Pass {
				continue
			}
			ew.printf("\n**%s — %s %s**: %s\n", s.Scenario.Name, v.Invariant, statusMark[v.Status], verdictLine(v))
			for i, ex := range v.Examples {
				if i == 5 {
					break
				}
				ew.printf("- `%s`: %s\n", ex.Key, exampleProblem(ex))
			}
		}
	}
	return ew.err
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes JUnit XML: a suite per scenario, a case per invariant
// and threshold. A case fails when it goes against the expectation.
func WriteJUnit(w io.Writer, ss []*Summary) error {
	var out junitSuites
	for _, s := range ss {
		suite := junitSuite{Name: s.Scenario.Name}
		for _, v := range s.Verdicts {
			c := junitCase{Name: v.Invariant + onOracle(v.Oracle), Classname: "idemcheck." + s.Scenario.Name}
			bad := v.Status == checks.Fail
			if s.Scenario.Expect == "violation" {
				bad = s.Result == checks.NotMet
			}
			switch {
			case v.Status == checks.Unknown:
				c.Skipped = &junitMessage{Message: verdictLine(v)}
				suite.Skipped++
			case bad:
				var b strings.Builder
				for _, ex := range v.Examples {
					fmt.Fprintf(&b, "key %s: %s\n", ex.Key, exampleProblem(ex))
				}
				c.Failure = &junitMessage{Message: verdictLine(v), Text: b.String()}
				suite.Failures++
			}
			suite.Cases = append(suite.Cases, c)
		}
		for _, t := range s.Thresholds {
			c := junitCase{Name: "threshold " + t.Name, Classname: "idemcheck." + s.Scenario.Name}
			if !t.OK {
				c.Failure = &junitMessage{Message: fmt.Sprintf("%.3g %s over the limit %.3g", t.Actual, t.Unit, t.Limit)}
				suite.Failures++
			}
			suite.Cases = append(suite.Cases, c)
		}
		suite.Tests = len(suite.Cases)
		out.Suites = append(out.Suites, suite)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func onOracle(o string) string {
	if o == "" {
		return ""
	}
	return " on " + o
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err != nil {
		return
	}
	_, e.err = fmt.Fprintf(e.w, format, args...)
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
