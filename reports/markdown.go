package reports

import (
	"fmt"
	"html"
	"io"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/checks"
)

// mdExamples is how many keys of a failing verdict the Markdown report
// shows as evidence; report.json and the HTML report hold the rest.
const mdExamples = 5

// WriteMarkdown writes a CI job summary or a pull-request comment (GitHub
// Flavored Markdown): a headline, a table with a ✅, ❌ or ⚠️ per scenario
// and the reason, then a section per scenario that did not pass (its
// seed and key nonce, faults, checks and thresholds with units, and the
// evidence: each failing key and its attempts), and the passing ones
// folded. A scenario that expected a violation and caught it passes.
// Every name, key and answer is escaped, so a | or a <b> in them cannot
// break the table or inject markup.
func WriteMarkdown(w io.Writer, ss []*Summary) error {
	ew := &errWriter{w: w}
	ew.printf("## %s idemcheck: %s\n\n", headMark(ss), headline(ss))
	ew.printf("| | scenario | result | why | ops | op p99 |\n|---|---|---|---|---|---|\n")
	for _, s := range ss {
		name := md(s.Scenario.Name)
		if s.Interrupted {
			name += " ⏹ interrupted"
		}
		if s.Aborted != "" {
			name += " ⏹ stopped early"
		}
		p99 := "–"
		if s.Latency.Op.Count > 0 {
			p99 = quantity(s.Latency.Op.P99, "ms")
		}
		ew.printf("| %s | %s | %s | %s | %d | %s |\n", mark(s.Result), name, resultWord(s.Result), md(s.Why), s.Load.Ops, p99)
	}
	var passing []*Summary
	for _, s := range ss {
		if s.Result == checks.Met {
			passing = append(passing, s)
			continue
		}
		ew.printf("\n### %s %s\n\n", mark(s.Result), md(s.Scenario.Name))
		writeMarkdownScenario(ew, s)
	}
	if len(passing) > 0 {
		ew.printf("\n<details><summary>%s passed</summary>\n", plural(len(passing), "scenario"))
		for _, s := range passing {
			ew.printf("\n#### %s %s\n\n", mark(s.Result), md(s.Scenario.Name))
			writeMarkdownScenario(ew, s)
		}
		ew.printf("\n</details>\n")
	}
	return ew.err
}

func headMark(ss []*Summary) string {
	t := tallyOf(ss)
	switch {
	case t.failed > 0 || t.total == 0:
		return "❌"
	case t.inconclusive > 0:
		return "⚠️"
	}
	return "✅"
}

func writeMarkdownScenario(w *errWriter, s *Summary) {
	w.printf("**%s**: %s\n\n", resultWord(s.Result), md(s.Why))
	if s.Interrupted {
		w.printf("> ⏹ **Interrupted**: the run was stopped before its end; only what ran was judged.\n\n")
	}
	if s.Aborted != "" {
		w.printf("> ⏹ **Stopped early** %s into the load (abort_on_fail): %s\n\n", s.AbortedAt.Round(time.Millisecond), md(s.Aborted))
	}
	var meta []string
	if s.Scenario.Target != "" {
		meta = append(meta, "target "+md(s.Scenario.Target))
	}
	if s.Result == Errored {
		w.printf("%s\n", strings.Join(meta, " · "))
		return
	}
	meta = append(meta, fmt.Sprintf("expect %s", md(s.Scenario.Expect)), fmt.Sprintf("seed `%d`", s.Seed), fmt.Sprintf("key nonce `%d`", s.KeyNonce))
	w.printf("%s  \n", strings.Join(meta, " · "))
	l := s.Load
	w.printf("%d ops (%.0f/s), %d attempts, %d retries; %d acknowledged, %d rejected, %d indeterminate, %d not sent  \n",
		l.Ops, l.OpsPerSecond, l.Attempts, l.Retries, l.Acked, l.Rejected, l.Indeterminate, l.NotSent)
	for _, st := range s.Stages {
		w.printf("%s  \n", md(stageLine(st)))
	}
	w.printf("faults: %s  \n", md(faultList(s.Faults, s.Calibration, "none")))
	if c := calibrationLine(s.Calibration); c != "" {
		w.printf("calibration: %s  \n", md(c))
	}
	for i, x := range s.Nemesis {
		w.printf("%s  \n", md(nemesisLine(i+1, x)))
	}
	if s.ConsumerCut != nil {
		w.printf("%s  \n", md(consumerCutLine(s.ConsumerCut)))
	}
	if s.Rerun != "" && !strings.ContainsAny(s.Rerun, "`\n\r") {
		w.printf("rerun: `%s`\n\n", s.Rerun)
	} else {
		w.printf("rerun: `idemcheck run %s --seed %d --key-nonce %d`\n\n", codeSafe(s.Scenario.Source, s.Scenario.Name), s.Seed, s.KeyNonce)
	}

	if len(s.Verdicts)+len(s.Thresholds)+len(s.Findings)+len(s.Warnings) > 0 {
		w.printf("| | check | detail |\n|---|---|---|\n")
		for _, v := range s.Verdicts {
			w.printf("| %s | %s | %s |\n", verdictMark(s, v), md(verdictName(v)), md(verdictLine(v)))
		}
		for _, t := range s.Thresholds {
			m := "✅"
			if !t.OK {
				m = "❌"
			}
			w.printf("| %s | threshold %s | %s |\n", m, md(t.Name), md(thresholdLine(t)))
		}
		for _, f := range s.Findings {
			w.printf("| ℹ️ | %s (%s) | %s |\n", md(f.Check), md(f.Severity), md(f.Summary))
		}
		for _, x := range s.Warnings {
			w.printf("| ⚠️ | warning | %s |\n", md(x))
		}
	}
	for _, v := range s.Verdicts {
		if v.Status != checks.Fail || len(v.Examples) == 0 {
			continue
		}
		// <summary> is HTML: Markdown escapes would show as typed
		title := fmt.Sprintf("Evidence: %s, %s", html.EscapeString(verdictName(v)), plural(v.Violations, "key"))
		if expectedViolation(s) {
			title += " (the expected violation)"
		}
		open := " open" // a failure's evidence shows; an expected one folds
		if expectedViolation(s) {
			open = ""
		}
		w.printf("\n<details%s><summary>%s</summary>\n\n", open, title)
		if l := attributionLine(v); l != "" {
			w.printf("%s\n\n", md(l))
		}
		for i, ex := range v.Examples {
			if i == mdExamples {
				w.printf("- … %d more in report.json\n", len(v.Examples)-mdExamples)
				break
			}
			user := ""
			if ex.User != "" {
				user = " (user " + md(ex.User) + ")"
			}
			w.printf("- key %s%s: %s\n", md(ex.Key), user, md(exampleProblem(ex)))
			for _, a := range ex.Attempts {
				w.printf("  - #%d %s\n", a.N, md(attemptLine(a)))
			}
		}
		w.printf("\n</details>\n")
	}
}

// verdictMark is a verdict's sign; in a scenario that expected a
// violation and caught it, the failing invariant is what passed.
func verdictMark(s *Summary, v checks.Verdict) string {
	switch v.Status {
	case checks.Pass:
		return "✅"
	case checks.Unknown:
		return "⚠️"
	}
	if expectedViolation(s) {
		return "✅ caught"
	}
	return "❌"
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// mdEscaper escapes what Markdown or HTML would read in text: markup,
// table cell separators, emphasis, links, code spans; line breaks become
// spaces so a table row stays one line.
var mdEscaper = strings.NewReplacer(
	"&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;",
	"|", `\|`, `\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`,
	"[", `\[`, "]", `\]`, "#", `\#`, "~", `\~`, "!", `\!`,
	"\r\n", " ", "\n", " ", "\r", " ",
)

// md is s as Markdown text that renders as s.
func md(s string) string { return mdEscaper.Replace(s) }

// codeSafe is the first of the candidates fit for a code span in a
// command line (a built-in name or a plain file path), else "NAME".
func codeSafe(candidates ...string) string {
	for _, c := range candidates {
		c = strings.TrimPrefix(c, "builtin:")
		if c != "" && !strings.ContainsAny(c, "`|<>&\n\r\"' $;") {
			return c
		}
	}
	return "NAME"
}
