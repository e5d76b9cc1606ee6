package reports

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
	"github.com/idemcheck/idemcheck/measure"
)

// Terminal escapes (issue 20, item 5): every string a target, a scenario
// or a saved history puts in a text or Markdown report reaches the
// terminal with its control characters, bidi controls and line separators
// escaped; the renderer's own newlines are the only raw ones.

// terminalAttacks are what a hostile target or scenario sends, each with
// how it must read once escaped.
var terminalAttacks = []struct{ name, in, shown string }{
	{"clear screen", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
	{"OSC 0 window title", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
	{"OSC 8 link", "\x1b]8;;https://evil.example/\x1b\\here\x1b]8;;\x1b\\", `\x1b]8;;https://evil.example/\x1b\here\x1b]8;;\x1b\`},
	{"cursor moves", "\x1b[1A\x1b[2K\x1b[10;1H", `\x1b[1A\x1b[2K\x1b[10;1H`},
	{"CR", "\rPASS ", `\rPASS `},
	{"NUL", "a\x00b", `a\x00b`},
	{"C0 BEL BS VT FF", "\x07\x08\x0b\x0c", `\x07\x08\x0b\x0c`},
	{"DEL", "a\x7fb", `a\x7fb`},
	{"C1 CSI", "\u009b2J", `\u009b2J`},
	{"raw 0x9b byte", "\x9b2J", `\x9b2J`},
	{"tab", "a\tb", `a\tb`},
	{"newline", "a\nPASS", `a\nPASS`},
	{"RLO", "\u202eSSAP", `\u202eSSAP`},
	{"bidi embeddings", "\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`},
	{"bidi isolates", "\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
	{"bidi marks", "\u200e\u200f\u061c", `\u200e\u200f\u061c`},
	{"line separator", "a\u2028b", `a\u2028b`},
	{"paragraph separator", "a\u2029b", `a\u2029b`},
}

// hostileSummary is a judged run whose every string that comes from the
// target, the scenario or the history is v.
func hostileSummary(v string) *Summary {
	start := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	att := history.Attempt{Op: 0, N: 1, Fault: v, Outcome: history.OK, Status: 201, End: msd(3),
		Fields: map[string]string{"id": v, v: "x"}, Headers: map[string]string{"Idempotency-Key": v, "Location": v, "Retry-After": v}}
	failed := history.Attempt{Op: 0, N: 2, Outcome: history.Fail, Err: v, End: msd(4)}
	return &Summary{
		FormatVersion: FormatVersion, Tool: "idemcheck test", RunID: v,
		Scenario: ScenarioInfo{Name: v, Description: v, Source: v, Expect: v, Target: v},
		Started:  start, Ended: start.Add(time.Second), Interrupted: true, InterruptedIn: v, Rerun: v,
		Load:     measure.Load{Ops: 1, Attempts: 2},
		Faults:   []measure.FaultCount{{Name: v, Count: 1, Planned: 1, Bit: 1}},
		Statuses: []measure.Count{{Name: v, Count: 1}},
		Errors:   []measure.Count{{Name: v, Count: 1}},
		Verdicts: []checks.Verdict{
			{Invariant: v, Oracle: v, Status: checks.Fail, Summary: v, Violations: 1,
				Examples: []checks.Example{{Key: v, User: v, Want: v, Problem: v, Attempts: []history.Attempt{att, failed}},
					{Key: v, Want: v, Effects: 2, Attempts: []history.Attempt{att}}}},
			{Invariant: v, Status: checks.Unknown, Reason: v},
		},
		Thresholds: []checks.Threshold{{Name: v, Limit: 40, Actual: 53, Unit: v}},
		Findings:   []checks.Finding{{Severity: v, Check: v, Summary: v, Count: 1}},
		Warnings:   []string{v},
		Calibration: &history.Calibration{Requests: 3, Answered: 3,
			Resolved: []history.Resolved{{Kind: v, Param: v, Relative: v, Value: msd(5)}}},
		Nemesis: []history.NemesisWindow{{N: 1, Err: v},
			{N: 2, Err: v, Stop: &history.NemesisCommand{Command: v, Err: v, Output: v}, Restart: &history.NemesisCommand{Command: v}}},
		Result: checks.NotMet, Why: v,
	}
}

// hostileScorecard is an audit whose every string from the target, the
// flags or the scenario is v.
func hostileScorecard(v string) *checks.Scorecard {
	one := 1
	ev := []checks.Evidence{
		{Probe: v, Request: v, Key: v, Fault: v, Status: 422, Answer: v, AnswerHeaders: map[string]string{"Idempotent-Replayed": v}, Effects: &one},
		{Probe: v, Request: v, Key: v, Error: v},
	}
	return &checks.Scorecard{FormatVersion: checks.ScorecardFormat, Target: v, Method: v, Profile: v, Oracle: v, Requests: 2,
		Checks: []checks.ContractCheck{
			{ID: v, Name: v, Severity: checks.Severity(v), Result: checks.Fail, Summary: v, Evidence: ev},
			{ID: v, Name: v, Severity: checks.Critical, Result: checks.Unknown, Summary: v, Evidence: ev},
			{ID: v, Name: v, Severity: checks.Medium, Result: checks.Pass, Summary: v},
		},
		Result: checks.NotMet, Why: v}
}

// terminalOutputs renders v through every text renderer a terminal shows:
// the run's text and Markdown reports (a judged run and one that could
// not run), and the audit's text and Markdown scorecards.
func terminalOutputs(t testing.TB, v string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, format := range []string{"text", "markdown"} {
		w, err := Writer(format)
		if err != nil {
			t.Fatal(err)
		}
		for name, s := range map[string]*Summary{"run": hostileSummary(v), "not run": NotRun("idemcheck test", v, v, time.Time{}, errors.New(v))} {
			var b bytes.Buffer
			if err := w(&b, []*Summary{s, hostileSummary(v)}); err != nil {
				t.Fatalf("%s %s: %v", format, name, err)
			}
			out[format+" "+name] = b.String()
		}
		var b bytes.Buffer
		if err := WriteScorecard(&b, format, hostileScorecard(v), nil, Options{}); err != nil {
			t.Fatalf("scorecard %s: %v", format, err)
		}
		out["scorecard "+format] = b.String()
	}
	return out
}

// rawTerminalRune is the first rune in s, other than a newline, that a
// terminal must not receive raw, and its line: an oracle apart from
// termsafe's (Unicode's controls and bidi controls, the line and
// paragraph separators, bytes that are not UTF-8).
func rawTerminalRune(s string) (rune, string, bool) {
	for i, r := range s {
		bad := r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") ||
			r != '\n' && unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
		if bad {
			start := strings.LastIndexByte(s[:i], '\n') + 1
			end := strings.IndexByte(s[i:], '\n')
			if end < 0 {
				end = len(s) - i
			}
			return r, s[start : i+end], true
		}
	}
	return 0, "", false
}

func TestTextRenderersEscapeEveryAttack(t *testing.T) {
	plain := terminalOutputs(t, "x")
	for _, a := range terminalAttacks {
		t.Run(a.name, func(t *testing.T) {
			for name, got := range terminalOutputs(t, a.in) {
				if r, line, ok := rawTerminalRune(got); ok {
					t.Errorf("%s: raw %U in line %q", name, r, line)
				}
				if strings.Contains(got, a.in) {
					t.Errorf("%s holds %q raw", name, a.in)
				}
				if n, want := strings.Count(got, "\n"), strings.Count(plain[name], "\n"); n != want {
					t.Errorf("%s: %d lines, %d with a plain value: a value added lines", name, n, want)
				}
				shown := a.shown
				if strings.HasPrefix(name, "markdown") || name == "scorecard markdown" {
					// Markdown escapes the backslash of \x1b as \\x1b (it
					// renders \x1b), and md turns a line break into a space
					shown = ""
				}
				if shown != "" && !strings.Contains(got, shown) {
					t.Errorf("%s does not show %q as %s:\n%s", name, a.in, shown, got)
				}
			}
		})
	}
}

// TestCROverwriteReadsFail: an answer field ending in "\rPASS" cannot
// make a terminal show the FAIL line as PASS: the line starts with FAIL
// and shows the \r.
func TestCROverwriteReadsFail(t *testing.T) {
	s := hostileSummary("x")
	s.Verdicts[0].Invariant = "exactly_once"
	s.Verdicts[0].Summary = "1 key charged twice\rPASS    exactly_once: 1 key charged once"
	var b bytes.Buffer
	if err := WriteText(&b, []*Summary{s}); err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, "charged twice") {
			line = l
		}
	}
	if !strings.HasPrefix(line, "FAIL    exactly_once") || !strings.Contains(line, `charged twice\rPASS`) || strings.Contains(b.String(), "\r") {
		t.Errorf("verdict line = %q, want FAIL first and a visible \\r", line)
	}

	sc := hostileScorecard("x")
	sc.Checks[0].Evidence[0].Answer = `{"error":"duplicate"}` + "\r" + "C06 concurrent-same-key  critical  PASS"
	b.Reset()
	if err := WriteScorecard(&b, "text", sc, nil, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `→ 422 (replayed) {"error":"duplicate"}\rC06`) || strings.Contains(b.String(), "\r") {
		t.Errorf("scorecard evidence does not show the \\r:\n%s", b.String())
	}
}

// TestEscapedTextKeepsOrdinaryText: escaping leaves text with nothing to
// escape as it was: a value with accents, emoji, a backslash.
func TestEscapedTextKeepsOrdinaryText(t *testing.T) {
	v := `naïve ✅ C:\dir\x1b 日本`
	for name, got := range terminalOutputs(t, v) {
		if !strings.Contains(got, "naïve ✅") || !strings.Contains(got, "日本") {
			t.Errorf("%s changed ordinary text:\n%s", name, got)
		}
		if strings.HasPrefix(name, "text") || name == "scorecard text" {
			if !strings.Contains(got, v) {
				t.Errorf("%s does not show %q as it is:\n%s", name, v, got)
			}
		}
	}
}

// FuzzTextRenderers feeds arbitrary strings into every target-derived
// field of the text and Markdown reports and scorecards: no control,
// bidi or separator rune reaches the output raw except the renderer's
// own newlines, and a value never adds a line.
func FuzzTextRenderers(f *testing.F) {
	for _, a := range terminalAttacks {
		f.Add(a.in)
	}
	f.Add("FAIL\r\nPASS\u2028\u0085\x1b\\")
	f.Add("\xff\xfe\x9b\xc2")
	f.Add("")
	plain := terminalOutputs(f, "x")
	f.Fuzz(func(t *testing.T, v string) {
		for name, got := range terminalOutputs(t, v) {
			if r, line, ok := rawTerminalRune(got); ok {
				t.Fatalf("%s: raw %U in line %q", name, r, line)
			}
			if v != "" {
				if n, want := strings.Count(got, "\n"), strings.Count(plain[name], "\n"); n != want {
					t.Fatalf("%s: %d lines, %d with a plain value", name, n, want)
				}
			}
		}
	})
}

// TestBenchTextEscapesTheTarget: bench overhead's text and Markdown name
// the arms by their requests (the user's URLs): shown escaped.
func TestBenchTextEscapesTheTarget(t *testing.T) {
	b := &Bench{What: "POST http://h/\x1b]0;owned\x07\rok (A) and POST /naive\u202e (B)", Rate: 10, Rounds: 2,
		A: BenchArm{Name: "a"}, B: BenchArm{Name: "b"}, Verdict: "within budget"}
	for name, write := range map[string]func(io.Writer) error{"text": b.WriteText, "markdown": b.WriteMarkdown} {
		var out bytes.Buffer
		if err := write(&out); err != nil {
			t.Fatal(err)
		}
		if r, line, ok := rawTerminalRune(out.String()); ok {
			t.Errorf("bench %s: raw %U in line %q", name, r, line)
		}
		if !strings.Contains(out.String(), `\x1b]0;owned\x07\rok`) {
			t.Errorf("bench %s does not show the URL escaped:\n%s", name, out.String())
		}
	}
}
