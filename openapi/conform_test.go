package openapi

import (
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/idemcheck/idemcheck/checks"
	"github.com/idemcheck/idemcheck/history"
)

// answers is a history of one calibration op and one op of the key k
// answered as given (status, content type, body).
func answers(as ...history.Attempt) *history.History {
	h := &history.History{Ops: []history.Op{{ID: 0, Key: "cal", Check: history.CheckCalibration}, {ID: 1, Key: "k", Check: "C03"}}}
	req := &history.Request{Method: "POST", URL: "http://api/charges"}
	h.Attempts = append(h.Attempts, history.Attempt{Op: 0, N: 1, Outcome: history.OK, Status: 201, Request: req,
		Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"id":"ch_0","amount":1}`})
	for i, a := range as {
		a.Op, a.N, a.Outcome = 1, i+1, history.OK
		if a.Request == nil {
			a.Request = req
		}
		h.Attempts = append(h.Attempts, a)
	}
	return h
}

func json201(body string) history.Attempt {
	return history.Attempt{Status: 201, Headers: map[string]string{"Content-Type": "application/json"}, Body: body}
}

func TestConformance(t *testing.T) {
	s := load(t, "v30.yaml")
	ops, _ := plan(t, s, PlanOptions{})
	op := ops["createCharge"]
	other := history.Attempt{Status: 201, Request: &history.Request{Method: "POST", URL: "http://api/elsewhere"}, Headers: map[string]string{"Content-Type": "text/html"}, Body: "<p>"}
	cases := []struct {
		name string
		h    *history.History
		want checks.Status
		sev  checks.Severity
		says string
	}{
		{"as declared", answers(json201(`{"id":"ch_1","amount":100}`), json201(`{"id":"ch_1","amount":100}`)), checks.Pass, "", "3 answers judged"},
		{"a wrong replay", answers(json201(`{"id":"ch_1","amount":100}`), json201(`{"id":5,"amount":100}`)), checks.Fail, checks.High,
			"a replay was 201 with a body the document's schema refuses at /id"},
		{"a first answer off the document", answers(json201(`{"amount":100}`)), checks.Fail, checks.Medium, "an answer was 201 with a body the document's schema refuses"},
		{"an undeclared status", answers(history.Attempt{Status: 500, Headers: map[string]string{"Content-Type": "application/json"}, Body: `{}`}), checks.Fail, checks.Medium,
			"an answer was 500, which the document does not declare (#/paths/~1charges/post/responses: 201)"},
		{"a replay of another type", answers(json201(`{"id":"ch_1","amount":100}`), history.Attempt{Status: 201, Headers: map[string]string{"Content-Type": "text/html"}, Body: "<p>"}),
			checks.Fail, checks.High, "a replay was 201 with text/html"},
		{"a body cut short is not judged", answers(history.Attempt{Status: 201, Size: 1 << 20, Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"id":`}), checks.Pass, "", "1 answers judged"},
		{"another path is another operation's", answers(json201(`{"id":"ch_1","amount":100}`), other), checks.Pass, "", "2 answers judged"},
	}
	for _, tc := range cases {
		c := s.Conformance(op, tc.h)
		if c.ID != ConformanceID || c.Result != tc.want || tc.sev != "" && c.Severity != tc.sev || !strings.Contains(c.Summary, tc.says) {
			t.Errorf("%s: %s %s (%s): %s\nwant %s %s %q", tc.name, c.ID, c.Result, c.Severity, c.Summary, tc.want, tc.sev, tc.says)
		}
	}
	if c := s.Conformance(op, &history.History{}); c.Result != checks.Unknown {
		t.Errorf("no answers: %s", c.Result)
	}
}

// A response declared as a media range covers the answers of its types;
// a faithful replay of an off-document first answer is not a wrong replay.
func TestConformanceRangesAndFaithfulReplays(t *testing.T) {
	s := load(t, "v30.yaml")
	ops, _ := plan(t, s, PlanOptions{})
	op := ops["createCharge"]
	for _, ct := range []string{"*/*", "application/*"} {
		resp := op.op.Responses.Value("201").Value
		media := resp.Content["application/json"]
		resp.Content = map[string]*openapi3.MediaType{ct: media}
		c := s.Conformance(op, answers(json201(`{"id":"ch_1","amount":100}`), json201(`{"id":"ch_1","amount":100}`)))
		if c.Result != checks.Pass {
			t.Errorf("declared %s: %s: %s", ct, c.Result, c.Summary)
		}
		resp.Content = map[string]*openapi3.MediaType{"application/json": media}
	}
	c := s.Conformance(op, answers(json201(`{"amount":100}`), json201(`{"amount":100}`)))
	if c.Result != checks.Fail || c.Severity != checks.Medium {
		t.Errorf("a faithful replay of an off-document answer: %s (%s): %s, want a medium failure", c.Result, c.Severity, c.Summary)
	}
}
