package reports

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
)

func TestWriteScorecard(t *testing.T) {
	one := 1
	sc := &checks.Scorecard{FormatVersion: checks.ScorecardFormat, Target: "http://h/charges", Method: "POST", Profile: "draft", Oracle: "none", Requests: 3,
		Result: checks.NotMet, Why: "contract violated: C06 concurrent-same-key (critical)",
		Checks: []checks.ContractCheck{
			{ID: "C01", Name: "missing-key", Severity: checks.Medium, Result: checks.Pass, Summary: "400", JudgedBy: checks.ByAnswers, Evidence: []checks.Evidence{}},
			{ID: "C06", Name: "concurrent-same-key", Severity: checks.Critical, Result: checks.Fail, Summary: "two | resources", JudgedBy: checks.ByAnswers,
				Evidence: []checks.Evidence{{Probe: "round 1: copy 1", Request: "POST http://h/charges", Key: "k", Status: 201, Answer: `{"id":"ch_1"}`, Effects: &one}}},
		}}
	for _, f := range ScorecardFormats() {
		var b bytes.Buffer
		if err := WriteScorecard(&b, f, sc, nil, Options{}); err != nil {
			t.Fatalf("WriteScorecard(%s) = %v", f, err)
		}
		for _, want := range []string{"C06", "concurrent-same-key"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("WriteScorecard(%s) lacks %q:\n%s", f, want, b.String())
			}
		}
	}
	var b bytes.Buffer
	_ = WriteScorecard(&b, "json", sc, nil, Options{})
	if !strings.Contains(b.String(), `"result": "not_met"`) || !strings.Contains(b.String(), `"evidence": []`) || strings.Contains(b.String(), "null") {
		t.Errorf("JSON scorecard:\n%s", b.String())
	}
	sc.Checks = append(sc.Checks, checks.ContractCheck{ID: "C10", Name: "timeout-in-flight", Severity: checks.Critical, Result: checks.Unknown, Summary: "cannot tell", Evidence: []checks.Evidence{}})
	for opt, want := range map[string]string{"": `<error message="unknown: cannot tell" type="inconclusive">`, "failure": `<failure message="unknown: cannot tell" type="inconclusive">`} {
		b.Reset()
		if err := WriteScorecard(&b, "junit", sc, nil, Options{JUnitInconclusive: opt}); err != nil || !strings.Contains(b.String(), want) {
			t.Errorf("junit with --junit-inconclusive %q: %v, want %s in\n%s", opt, err, want, b.String())
		}
	}
	if err := WriteScorecard(&b, "yaml", sc, nil, Options{}); err == nil {
		t.Error("WriteScorecard(yaml) = nil error")
	}
}

// TestScorecardJUnitSchema: the audit's JUnit is the run's, valid against
// the schema CI reporters accept (a skipped, an unknown, a failed and a
// passed check, with and without the history).
func TestScorecardJUnitSchema(t *testing.T) {
	xmllint := tool(t, "libxml2-utils", "xmllint")
	sc := &checks.Scorecard{FormatVersion: checks.ScorecardFormat, Target: "http://h/charges?x=<1>", Method: "POST", Profile: "draft", Oracle: "none", Requests: 9,
		Result: checks.NotMet, Why: "contract violated",
		Checks: []checks.ContractCheck{
			{ID: "C01", Name: "missing-key", Severity: checks.Medium, Result: checks.Pass, Summary: "400", Evidence: []checks.Evidence{}},
			{ID: "C06", Name: "concurrent-same-key", Severity: checks.Critical, Result: checks.Fail, Summary: "two & resources",
				Evidence: []checks.Evidence{{Probe: "round 1: copy 1", Request: "POST http://h/charges", Key: "k", Status: 201}}},
			{ID: "C10", Name: "timeout-in-flight", Severity: checks.Critical, Result: checks.Unknown, Summary: "cannot tell", Evidence: []checks.Evidence{}},
			{ID: "C15", Name: "cross-user", Severity: checks.Critical, Result: checks.Skipped, Summary: "give --as", Evidence: []checks.Evidence{}},
		}}
	h := &history.History{Meta: history.Meta{RunID: "r1", Started: time.Unix(1e9, 0), Ended: time.Unix(1e9+2, 0)}}
	dir := t.TempDir()
	for name, hh := range map[string]*history.History{"with-history": h, "without": nil} {
		var b bytes.Buffer
		if err := WriteScorecard(&b, "junit", sc, hh, Options{}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name+".xml")
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, xmllint, "--noout", "--nonet", "--schema", filepath.Join("testdata", "junit.xsd"), path).CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("%s: xmllint --schema junit.xsd: %v\n%s\n%s", name, err, out, b.String())
		}
		for _, want := range []string{`<skipped message="give --as">`, `<failure message="two &amp; resources" type="critical">`, `<error message="unknown: cannot tell"`} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s: the JUnit lacks %s:\n%s", name, want, b.String())
			}
		}
	}
}
