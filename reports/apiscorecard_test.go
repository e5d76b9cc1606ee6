package reports

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/checks"
)

func apiSample() *checks.APIScorecard {
	ev := []checks.Evidence{{Probe: "round 1: copy 1", Request: "POST http://api/charges", Key: "k1", Status: 201, Answer: `{"id":"ch_1"}`}}
	a := &checks.APIScorecard{Spec: "spec.yaml", Target: "http://api", Profile: "draft",
		Operations: []checks.OperationCard{
			{Operation: "listOk (POST /ok)", Card: &checks.Scorecard{Result: checks.Met, Checks: []checks.ContractCheck{
				{ID: "C03", Name: "sequential-replay", Result: checks.Pass, Severity: checks.Critical},
				{ID: "C06", Name: "concurrent-copies", Result: checks.Skipped}}}},
			{Operation: "createCharge (POST /charges)", Card: &checks.Scorecard{Result: checks.NotMet, Checks: []checks.ContractCheck{
				{ID: "C03", Name: "sequential-replay", Result: checks.Pass, Severity: checks.Critical},
				{ID: "C06", Name: "concurrent-copies", Result: checks.Fail, Severity: checks.Critical, Summary: "two charges", Evidence: ev}}}},
			{Operation: "refund (POST /refunds)", Error: "its plain request failed: 404"},
		},
		Skipped: []checks.SkippedOperation{{Operation: "upload (PUT /u)", Pointer: "#/paths/~1u/put/requestBody/content", Reason: "the body is application/octet-stream only"}},
	}
	a.Decide()
	return a
}

func TestWriteAPIScorecard(t *testing.T) {
	a := apiSample()
	want := map[string][]string{
		"text":     {"createCharge (POST /charges) not_met", "X", "createCharge (POST /charges): C06 concurrent-copies (critical): two charges", "round 1: copy 1: POST http://api/charges", "refund (POST /refunds): not audited: its plain request failed: 404", "upload (PUT /u): the body is application/octet-stream only [#/paths/~1u/put/requestBody/content]", "result: NOT_MET"},
		"markdown": {"| Operation | Result | C03 | C06 |", "| createCharge (POST /charges) | **not_met** | . | **X** |", "<details><summary>createCharge (POST /charges): C06"},
		"json":     {`"operations"`, `"skipped"`, `"result": "not_met"`},
		"html":     {"<td class=\"fail\">X</td>", "createCharge (POST /charges): C06 concurrent-copies", "Left out by the plan"},
	}
	for format, parts := range want {
		var b bytes.Buffer
		if err := WriteAPIScorecard(&b, format, a, Options{}); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		for _, p := range parts {
			if !strings.Contains(b.String(), p) {
				t.Errorf("%s lacks %q:\n%s", format, p, b.String())
			}
		}
	}
	// the worst operation first
	if !strings.HasPrefix(a.Operations[0].Operation, "createCharge") {
		t.Errorf("order: %s first", a.Operations[0].Operation)
	}

	var b bytes.Buffer
	if err := WriteAPIScorecard(&b, "junit", a, Options{}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Class string `xml:"classname,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 4 || doc.Tests != 2+2+1+1 || doc.Failures != 1 || doc.Errors != 1 {
		t.Errorf("junit: %d suites, %d tests, %d failures, %d errors\n%s", len(doc.Suites), doc.Tests, doc.Failures, doc.Errors, b.String())
	}
	if doc.Suites[0].Cases[0].Class != "idemcheck.audit.createCharge" {
		t.Errorf("class %q", doc.Suites[0].Cases[0].Class)
	}
}
