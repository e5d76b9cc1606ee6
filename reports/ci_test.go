package reports

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
)

// variants are the results a CI report must tell apart: a failure, an
// expected violation caught (a pass), an inconclusive run, an interrupted
// one, and a scenario that could not run.
func variants(t *testing.T) []*Summary {
	failed := fixture(t)

	caught := fixture(t)
	caught.Scenario.Name = "naive | <b>caught</b>"
	caught.Scenario.Expect = "violation"
	caught.Thresholds = nil
	caught.Result, caught.Why = checks.Met, "expected a violation and caught one: exactly_once"

	unknown := fixture(t)
	unknown.Scenario.Name = "unreadable-oracle"
	unknown.Verdicts = []checks.Verdict{{Invariant: checks.ExactlyOnce, Oracle: "ledger", Status: checks.Unknown,
		Reason: "oracle ledger could not read: 503", Examples: []checks.Example{}}}
	unknown.Thresholds = nil
	unknown.Result, unknown.Why = checks.Inconclusive, "could not decide: exactly_once"

	cut := fixture(t)
	cut.Scenario.Name = "cut-short"
	cut.Interrupted = true
	cut.Verdicts = cut.Verdicts[1:]
	cut.Thresholds = nil
	cut.Result, cut.Why = checks.Inconclusive, "every invariant held on what ran, but the run was interrupted before its end"

	down := NotRun("idemcheck test", "charges", "http://127.0.0.1:9", time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		errors.New("target unreachable: dial tcp 127.0.0.1:9: connection refused"))
	return []*Summary{failed, caught, unknown, cut, down}
}

// cells splits a GFM table row into its cells, as GitHub does: on every
// | not escaped by a backslash.
func cells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(strings.TrimSuffix(row, "|"), "|")
	var out []string
	var cur strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row):
			cur.WriteByte(row[i])
			cur.WriteByte(row[i+1])
			i++
		case row[i] == '|':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(row[i])
		}
	}
	return append(out, cur.String())
}

func TestMarkdownForCI(t *testing.T) {
	ss := variants(t)
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, ss); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	golden(t, "report-ci.markdown", buf.Bytes())
	if !strings.HasPrefix(md, "## ❌ idemcheck: 2 of 5 scenarios failed, 2 inconclusive (interrupted)\n") {
		t.Errorf("headline = %q", strings.SplitN(md, "\n", 2)[0])
	}
	// every table row has as many cells as its header: no | in a name
	// breaks a table
	var width int
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			width = 0
			continue
		}
		n := len(cells(line))
		if width == 0 {
			width = n
		} else if n != width {
			t.Errorf("table row has %d cells, its header %d: %s", n, width, line)
		}
	}
	if strings.Contains(md, "<b>") || !strings.Contains(md, `naive \| &lt;b&gt;caught&lt;/b&gt;`) {
		t.Errorf("a scenario named with | and <b> is not escaped")
	}
	for _, want := range []string{
		"| ✅ | naive \\| &lt;b&gt;caught&lt;/b&gt; | passed |", // the expected violation passes
		"| ✅ caught | exactly\\_once on ledger |",              // its failing invariant is what passed
		"| ⚠️ | unreadable-oracle | inconclusive |",
		"| ⚠️ | cut-short ⏹ interrupted | inconclusive |",
		"> ⏹ **Interrupted**",
		"| ❌ | charges | could not run | target unreachable",
		"p99 latency 53 ms, limit 40 ms",
		"seed `42` · key nonce `0`",
		"faults: drop\\_ack 1 planned, 1 bit; reset 1 planned, 1 bit",
		"- key k1 (user bob): 2 effects for one acknowledged op (1 extra)",
		"  - #1 \\[drop\\_ack\\] info",
		"<details><summary>1 scenario passed</summary>",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown does not hold %q", want)
		}
	}
	// the failing scenarios come first, the passing one folded after them
	if strings.Index(md, "### ❌ charges-lost-ack-naive") > strings.Index(md, "#### ✅ naive") {
		t.Error("a passing scenario is listed before a failing one")
	}
}

func TestMarkdownHeadline(t *testing.T) {
	pass := func() *Summary { return &Summary{Result: checks.Met} }
	fail := &Summary{Result: checks.NotMet}
	cases := []struct {
		ss   []*Summary
		want string
	}{
		{nil, "No scenario ran"},
		{[]*Summary{pass()}, "1 scenario passed"},
		{[]*Summary{pass(), pass(), pass()}, "All 3 scenarios passed"},
		{[]*Summary{fail}, "1 scenario failed"},
		{[]*Summary{pass(), fail, {Result: checks.Inconclusive}}, "1 of 3 scenarios failed, 1 inconclusive"},
		{[]*Summary{pass(), {Result: checks.Inconclusive}}, "1 of 2 scenarios inconclusive"},
	}
	for _, c := range cases {
		if got := headline(c.ss); got != c.want {
			t.Errorf("headline(%d summaries) = %q, want %q", len(c.ss), got, c.want)
		}
	}
}

type parsedJUnit struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Suites   []struct {
		Name       string `xml:"name,attr"`
		Tests      int    `xml:"tests,attr"`
		Failures   int    `xml:"failures,attr"`
		Errors     int    `xml:"errors,attr"`
		Skipped    int    `xml:"skipped,attr"`
		Time       string `xml:"time,attr"`
		Properties []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name    string    `xml:"name,attr"`
			Time    string    `xml:"time,attr"`
			Failure *struct{} `xml:"failure"`
			Error   *struct{} `xml:"error"`
			Skipped *struct{} `xml:"skipped"`
		} `xml:"testcase"`
		SystemOut string `xml:"system-out"`
	} `xml:"testsuite"`
}

func junitOf(t *testing.T, ss []*Summary, o Options) ([]byte, parsedJUnit) {
	t.Helper()
	w, err := WriterFor("junit", o)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := w(&buf, ss); err != nil {
		t.Fatal(err)
	}
	var p parsedJUnit
	if err := xml.Unmarshal(buf.Bytes(), &p); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, buf.String())
	}
	return buf.Bytes(), p
}

func TestJUnitForCI(t *testing.T) {
	ss := variants(t)
	_, p := junitOf(t, ss, Options{})
	type counts struct{ tests, failures, errors int }
	want := map[string]counts{
		"charges-lost-ack-naive (run run-1)": {3, 2, 0},
		"naive | <b>caught</b> (run run-1)":  {2, 0, 0}, // the caught violation passes
		"unreadable-oracle (run run-1)":      {1, 0, 1}, // inconclusive: an error, never skipped
		"cut-short (run run-1)":              {2, 0, 1}, // interrupted: every check held, the result case says why it is not a pass
		"charges (http://127.0.0.1:9)":       {1, 0, 1}, // could not run: one error case, named by its target
	}
	if len(p.Suites) != len(want) {
		t.Fatalf("%d suites, want %d", len(p.Suites), len(want))
	}
	for _, s := range p.Suites {
		w := want[s.Name]
		if (counts{s.Tests, s.Failures, s.Errors}) != w || len(s.Cases) != w.tests {
			t.Errorf("suite %s: tests %d failures %d errors %d (%d cases), want %+v", s.Name, s.Tests, s.Failures, s.Errors, len(s.Cases), w)
		}
		if s.Skipped != 0 {
			t.Errorf("suite %s skips %d cases: CI draws a skipped case green", s.Name, s.Skipped)
		}
		if s.Time == "" || s.SystemOut == "" {
			t.Errorf("suite %s: time %q, system-out %q; want both", s.Name, s.Time, s.SystemOut)
		}
		for _, c := range s.Cases {
			if c.Skipped != nil || c.Time == "" {
				t.Errorf("suite %s case %s: skipped %v, time %q", s.Name, c.Name, c.Skipped != nil, c.Time)
			}
		}
		props := map[string]string{}
		for _, pr := range s.Properties {
			props[pr.Name] = pr.Value
		}
		if props["target"] == "" || (props["scenario"] != "charges" && (props["seed"] != "42" || props["key_nonce"] != "0")) {
			t.Errorf("suite %s properties %v, want target, seed and key_nonce", s.Name, props)
		}
	}
	if p.Tests != 9 || p.Failures != 2 || p.Errors != 3 {
		t.Errorf("testsuites: tests %d failures %d errors %d, want 9, 2, 3", p.Tests, p.Failures, p.Errors)
	}

	// configurable: inconclusive as a failure
	_, p = junitOf(t, ss[2:3], Options{JUnitInconclusive: JUnitFailure})
	if s := p.Suites[0]; s.Failures != 1 || s.Errors != 0 {
		t.Errorf("inconclusive as failure: failures %d errors %d, want 1, 0", s.Failures, s.Errors)
	}
	if _, err := WriterFor("junit", Options{JUnitInconclusive: "skipped"}); err == nil {
		t.Error("WriterFor(junit, inconclusive skipped) = nil error, want a refusal")
	}
}

// TestJUnitSchema validates the JUnit reports against the JUnit schema CI
// reporters accept, with xmllint.
func TestJUnitSchema(t *testing.T) {
	xmllint := tool(t, "libxml2-utils", "xmllint")
	dir := t.TempDir()
	for name, ss := range map[string][]*Summary{
		"golden":   {fixture(t)},
		"variants": variants(t),
		"none":     {},
		"load":     {loadFixture(t)},
		"two runs": twoRuns(t),
	} {
		b, _ := junitOf(t, ss, Options{})
		path := filepath.Join(dir, name+".xml")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, xmllint, "--noout", "--nonet", "--schema", filepath.Join("testdata", "junit.xsd"), path).CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("%s: xmllint --schema junit.xsd: %v\n%s", name, err, out)
		}
	}
}

// twoRuns are two runs of one scenario and that first run judged again:
// what a viewer reads when several runs' JUnit files are merged.
func twoRuns(t *testing.T) []*Summary {
	a, b := fixture(t), fixture(t)
	b.RunID, b.Seed = "run-2", 7
	return []*Summary{a, b, fixture(t)}
}

// Two runs of one scenario are two suites, each named by the scenario and
// its run, each with its own properties, none named twice in a suite; a
// run judged twice still makes two suites.
func TestJUnitSuitesOfTwoRuns(t *testing.T) {
	_, p := junitOf(t, twoRuns(t), Options{})
	names := []string{"charges-lost-ack-naive (run run-1)", "charges-lost-ack-naive (run run-2)", "charges-lost-ack-naive (run run-1) #2"}
	if len(p.Suites) != len(names) {
		t.Fatalf("%d suites, want %d", len(p.Suites), len(names))
	}
	for i, s := range p.Suites {
		if s.Name != names[i] {
			t.Errorf("suite %d named %q, want %q", i, s.Name, names[i])
		}
		props := map[string]string{}
		for _, pr := range s.Properties {
			if _, twice := props[pr.Name]; twice {
				t.Errorf("suite %s: property %s twice", s.Name, pr.Name)
			}
			props[pr.Name] = pr.Value
		}
		wantRun, wantSeed := "run-1", "42"
		if i == 1 {
			wantRun, wantSeed = "run-2", "7"
		}
		if props["scenario"] != "charges-lost-ack-naive" || props["run_id"] != wantRun || props["seed"] != wantSeed {
			t.Errorf("suite %s: properties %v, want scenario charges-lost-ack-naive, run_id %s, seed %s", s.Name, props, wantRun, wantSeed)
		}
	}
}
