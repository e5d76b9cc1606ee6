package reports

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/internal/clip"
	"github.com/idemcheck/idemcheck/internal/termsafe"
)

// Scorecard renders an audit's judgement (checks.Scorecard): the formats
// an audit writes, and how.

// ScorecardFormats lists the formats WriteScorecard renders.
func ScorecardFormats() []string { return []string{"text", "json", "markdown", "junit", "html"} }

// WriteScorecard renders sc to w in format: text (a table, then the
// evidence of the checks that did not pass), json (the stable form of
// docs/audit.md), markdown (a CI step summary), junit (one testcase per
// check, with o's choice for an unknown one) or html (the table, the
// evidence and, from h when it is not nil, each probe's requests on a
// timeline).
func WriteScorecard(w io.Writer, format string, sc *checks.Scorecard, h *history.History, o Options) error {
	switch format {
	case "text":
		return writeScorecardText(w, sc)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sc)
	case "markdown":
		return writeScorecardMarkdown(w, sc)
	case "junit":
		if err := o.validate(); err != nil {
			return err
		}
		return writeScorecardJUnit(w, sc, h, o.JUnitInconclusive == JUnitFailure)
	case "html":
		return writeScorecardHTML(w, sc, h)
	}
	return fmt.Errorf("unknown format %q (known: %s)", format, strings.Join(ScorecardFormats(), ", "))
}

// scoreTally is the one-line account of a scorecard.
func scoreTally(sc *checks.Scorecard) string {
	n := sc.Counts()
	failed := map[checks.Severity]int{}
	for _, c := range sc.Checks {
		if c.Result == checks.Fail {
			failed[c.Severity]++
		}
	}
	var parts []string
	for _, s := range []checks.Severity{checks.Critical, checks.High, checks.Medium, checks.Info} {
		if failed[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", failed[s], s))
		}
	}
	fails := "no check failed"
	if len(parts) > 0 {
		fails = "failed: " + strings.Join(parts, ", ")
	}
	return fmt.Sprintf("%s; %d passed, %d unknown, %d skipped; %d requests", fails, n[checks.Pass], n[checks.Unknown], n[checks.Skipped], sc.Requests)
}

func oracleLine(sc *checks.Scorecard) string {
	if sc.Oracle == "none" {
		return "no effects oracle: judged from the answers alone"
	}
	return "effects: " + sc.Oracle
}

// writeScorecardText writes the table and the evidence. Every value is
// printed through termsafe: an answer's control characters are shown
// escaped, and a tab in a value cannot add a column.
func writeScorecardText(w io.Writer, sc *checks.Scorecard) error {
	var b strings.Builder
	termsafe.Fprintf(&b, "audit %s %s (%s%s)\n\n", sc.Method, sc.Target, cond(sc.Profile != "", "profile "+sc.Profile+"; ", ""), oracleLine(sc))
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCHECK\tSEVERITY\tRESULT\tSUMMARY")
	for _, c := range sc.Checks {
		termsafe.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.ID, c.Name, c.Severity, strings.ToUpper(string(c.Result)), c.Summary)
	}
	tw.Flush()
	for _, c := range sc.Checks {
		if c.Result != checks.Fail && c.Result != checks.Unknown || len(c.Evidence) == 0 {
			continue
		}
		termsafe.Fprintf(&b, "\n%s %s (%s, %s): %s\n", c.ID, c.Name, c.Severity, c.Result, c.Summary)
		for i, e := range c.Evidence {
			if i == 8 {
				termsafe.Fprintf(&b, "  … %d more in --format json\n", len(c.Evidence)-i)
				break
			}
			termsafe.Fprintf(&b, "  %s\n", evidenceLine(e))
		}
	}
	termsafe.Fprintf(&b, "\nresult: %s: %s (%s)\n", strings.ToUpper(string(sc.Result)), sc.Why, scoreTally(sc))
	_, err := io.WriteString(w, b.String())
	return err
}

// evidenceLine is one exchange on one line.
func evidenceLine(e checks.Evidence) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Probe, e.Request)
	switch k := e.Key; {
	case k == `""`:
		b.WriteString(` key ""`)
	case k != "":
		if utf8.RuneCountInString(k) > 40 {
			k = clip.Words(k, 37)
		}
		fmt.Fprintf(&b, " key %q", k)
	}
	if e.Fault != "" {
		fmt.Fprintf(&b, " [%s]", e.Fault)
	}
	switch {
	case e.Error != "":
		fmt.Fprintf(&b, " → %s", e.Error)
	default:
		fmt.Fprintf(&b, " → %d", e.Status)
		if e.AnswerHeaders["Idempotent-Replayed"] != "" {
			b.WriteString(" (replayed)")
		}
		if e.Answer != "" {
			a := strings.ReplaceAll(e.Answer, "\n", " ")
			fmt.Fprintf(&b, " %s", clip.Words(a, 120))
		}
	}
	if e.Effects != nil {
		fmt.Fprintf(&b, " [effects %d]", *e.Effects)
	}
	return b.String()
}

func writeScorecardMarkdown(w io.Writer, sc *checks.Scorecard) error {
	var b strings.Builder
	termsafe.Fprintf(&b, "### idemcheck audit: %s\n\n", sc.Result)
	termsafe.Fprintf(&b, "`%s %s` · %s%s · %s\n\n", sc.Method, md(sc.Target), cond(sc.Profile != "", "profile `"+sc.Profile+"` · ", ""), md(oracleLine(sc)), scoreTally(sc))
	b.WriteString("| ID | Check | Severity | Result | Summary |\n|---|---|---|---|---|\n")
	for _, c := range sc.Checks {
		res := string(c.Result)
		if c.Result == checks.Fail {
			res = "**fail**"
		}
		termsafe.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", c.ID, c.Name, c.Severity, res, md(c.Summary))
	}
	for _, c := range sc.Checks {
		if c.Result != checks.Fail || len(c.Evidence) == 0 {
			continue
		}
		termsafe.Fprintf(&b, "\n<details><summary>%s %s: evidence</summary>\n\n```\n", c.ID, c.Name)
		for _, e := range c.Evidence {
			b.WriteString(termsafe.String(strings.ReplaceAll(evidenceLine(e), "```", "'''")) + "\n")
		}
		b.WriteString("```\n</details>\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeScorecardJUnit writes the audit as the run's JUnit is written (the
// same elements, valid against the Jenkins schema): a suite for the
// audited request, its profile, oracle and target as properties, and a
// case per check: a failure for a check that fails at the failing
// severity, an error (a failure with unknownFails) for an unknown one,
// skipped for a skipped one, the summary as system-out for the others.
func writeScorecardJUnit(w io.Writer, sc *checks.Scorecard, h *history.History, unknownFails bool) error {
	suite := scorecardSuite(sc, h, unknownFails, "idemcheck.audit")
	doc := junitSuites{Name: "idemcheck audit", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors, Time: suite.Time, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// scorecardSuite is the JUnit suite of one scorecard, its cases of
// class classname.
func scorecardSuite(sc *checks.Scorecard, h *history.History, unknownFails bool, classname string) junitSuite {
	suite := junitSuite{Name: "idemcheck audit " + sc.Method + " " + sc.Target, Time: "0.000",
		Properties: []junitProperty{{"profile", sc.Profile}, {"oracle", sc.Oracle}, {"target", sc.Target}, {"requests", fmt.Sprint(sc.Requests)}}}
	if h != nil {
		if !h.Meta.Started.IsZero() {
			suite.Timestamp = h.Meta.Started.UTC().Format("2006-01-02T15:04:05")
		}
		if h.Meta.Ended.After(h.Meta.Started) {
			suite.Time = seconds(h.Meta.Ended.Sub(h.Meta.Started))
		}
		suite.Properties = append(suite.Properties, junitProperty{"run_id", h.Meta.RunID})
	}
	for _, c := range sc.Checks {
		tc := junitCase{Name: c.ID + " " + c.Name, Classname: classname, Time: "0.000"}
		var lines []string
		for _, e := range c.Evidence {
			lines = append(lines, evidenceLine(e))
		}
		text := strings.Join(lines, "\n")
		switch {
		case c.Failed(sc.FailOn):
			tc.Failure = &junitMessage{Message: c.Summary, Type: string(c.Severity), Text: text}
			suite.Failures++
		case c.Result == checks.Unknown && unknownFails:
			tc.Failure = &junitMessage{Message: "unknown: " + c.Summary, Type: "inconclusive", Text: text}
			suite.Failures++
		case c.Result == checks.Unknown:
			tc.Error = &junitMessage{Message: "unknown: " + c.Summary, Type: "inconclusive", Text: text}
			suite.Errors++
		case c.Result == checks.Skipped:
			tc.Skipped = &junitSkipped{Message: c.Summary}
			suite.Skipped++
		default:
			tc.SystemOut = fmt.Sprintf("%s (%s): %s", c.Result, c.Severity, c.Summary)
		}
		suite.Tests++
		suite.Cases = append(suite.Cases, tc)
	}
	if sc.Interrupted {
		// The checks the interrupt skipped would read as skipped (green):
		// the audit itself did not finish.
		tc := junitCase{Name: "interrupted", Classname: classname, Time: "0.000"}
		msg := &junitMessage{Message: "the audit was interrupted before its end: " + sc.Why, Type: "interrupted"}
		if unknownFails {
			tc.Failure = msg
			suite.Failures++
		} else {
			tc.Error = msg
			suite.Errors++
		}
		suite.Properties = append(suite.Properties, junitProperty{"interrupted", "true"})
		suite.Tests++
		suite.Cases = append(suite.Cases, tc)
	}
	return suite
}

// cond is a when ok, else b.
func cond(ok bool, a, b string) string {
	if ok {
		return a
	}
	return b
}
