package audit

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcheck/idemcheck/lab"
	"github.com/idemcheck/idemcheck/scenarios"
)

func TestBodyForms(t *testing.T) {
	body := []byte(`{"amount":100, "currency":"usd","meta":{"b":1,"a":[1,2]}}`)
	ms, ok := members(body)
	if !ok || len(ms) != 3 || ms[0].name != "amount" || ms[2].name != "meta" {
		t.Fatalf("members(%s) = %v, %v", body, ms, ok)
	}
	re, sp := equivalents(body)
	if got, want := string(re), `{"meta":{"b":1,"a":[1,2]},"currency":"usd","amount":100}`; got != want {
		t.Errorf("reordered = %s, want %s", got, want)
	}
	if !strings.Contains(string(sp), "\n  \"amount\": 100") || bytes.Equal(sp, body) {
		t.Errorf("respaced = %q", sp)
	}
	if m, ok := mutate(body, "", 2); !ok || string(m) != `{"amount":102,"currency":"usd","meta":{"b":1,"a":[1,2]}}` {
		t.Errorf("mutate = %s, %v", m, ok)
	}
	if m, _ := mutate([]byte(`{"op_id":"k","sku":"A1"}`), "op_id", 1); string(m) != `{"op_id":"k","sku":"A1-1"}` {
		t.Errorf("mutate skips the key field: %s", m)
	}
	if m, _ := mutate([]byte(`{"ok":true}`), "", 1); string(m) != `{"ok":true,"idemcheck_probe":1}` {
		t.Errorf("mutate adds a member: %s", m)
	}
	if _, ok := mutate([]byte(`[1]`), "", 1); ok {
		t.Error("mutate of an array: ok")
	}
	if b, err := setField([]byte(`{"a":1}`), "op_id", "k1"); err != nil || string(b) != `{"a":1,"op_id":"k1"}` {
		t.Errorf("setField = %s, %v", b, err)
	}
	if b, err := setField(nil, "op_id", "k1"); err != nil || string(b) != `{"op_id":"k1"}` {
		t.Errorf("setField(nil) = %s, %v", b, err)
	}
	if _, err := setField([]byte(`[]`), "op_id", "k1"); err == nil {
		t.Error("setField on an array: nil error")
	}
	if r, s := equivalents([]byte(`{}`)); r != nil || s == nil {
		t.Errorf("equivalents({}) = %s, %s", r, s)
	}
}

func TestPaths(t *testing.T) {
	for in, want := range map[string]string{"/v1/charges": "/v1/idemcheck-sibling", "/charges?x=1": "/idemcheck-sibling", "/": "/idemcheck-sibling", "/v1/charges/": "/v1/idemcheck-sibling"} {
		if got := siblingPath(in); got != want {
			t.Errorf("siblingPath(%q) = %q, want %q", in, got, want)
		}
	}
	if withQuery("/c") != "/c?idemcheck=1" || withQuery("/c?a=1") != "/c?a=1&idemcheck=1" {
		t.Error("withQuery")
	}
}

func TestDecide(t *testing.T) {
	card := func(checks ...Check) *Scorecard { return &Scorecard{Checks: checks} }
	cases := []struct {
		sc     *Scorecard
		failOn string
		want   string
	}{
		{card(Check{Result: Pass}, Check{Result: Skipped}), "", Held},
		{card(Check{Result: Fail, Severity: Medium}), "", Held},
		{card(Check{Result: Fail, Severity: Medium}), "medium", Violated},
		{card(Check{Result: Fail, Severity: Info}), "medium", Held},
		{card(Check{Result: Fail, Severity: High}, Check{Result: Unknown}), "", Violated},
		{card(Check{Result: Unknown}, Check{Result: Skipped}), "", Inconclusive},
		{card(), "", Inconclusive},
	}
	for i, c := range cases {
		c.sc.decide(c.failOn)
		if c.sc.Result != c.want {
			t.Errorf("case %d: decide = %s, want %s", i, c.sc.Result, c.want)
		}
	}
}

func TestIdentity(t *testing.T) {
	a := &Auditor{}
	ex := func(body, loc string) *exchange {
		h := http.Header{}
		if loc != "" {
			h.Set("Location", loc)
		}
		return &exchange{answer: []byte(body), header: h}
	}
	if a.identity(ex(`{"id":"ch_1","x":1}`, "")) != a.identity(ex(`{"x":2, "id":"ch_1"}`, "")) {
		t.Error("same id, other fields: different identities")
	}
	if a.identity(ex(`{"id":"ch_1"}`, "")) == a.identity(ex(`{"id":"ch_2"}`, "")) {
		t.Error("different ids: same identity")
	}
	if a.identity(ex(`ok`, "/r/1")) == a.identity(ex(`ok`, "/r/2")) {
		t.Error("different Locations: same identity")
	}
	if a.identity(ex(`{"b":1,"a":2}`, "")) != a.identity(ex(`{"a":2,"b":1}`, "")) {
		t.Error("the same body reordered: different identities")
	}
}

// labScenario is the lab's charge endpoint as a scenario, with an oracle.
func labScenario(t *testing.T, oracle bool) *scenarios.Scenario {
	t.Helper()
	y := `name: audit
load: {ops: 1, concurrency: 1}
invariants: [{check: same_response}]
operation:
  path: /charges
  key: {header: Idempotency-Key}
  headers: {Authorization: "Bearer alice"}
  body: '{"amount":100,"currency":"usd","customer":"cus_{{.Seq}}"}'
`
	if oracle {
		y += `oracles:
  - name: ledger
    effects:
      per_key: {path: "/charges?idempotency_key={{.Key}}", value: $.count}
`
	}
	sc, err := scenarios.Parse("test", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func startLab(t *testing.T, bugs ...string) *url.URL {
	t.Helper()
	s, err := lab.NewMemory(lab.Config{ProcessorLatency: 20 * time.Millisecond, Bugs: bugs})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u
}

// TestRun runs a few checks on the lab, correct and with a bug, through
// the library: keys are UUIDs from the given source, the request cap
// holds, the evidence names keys and effects.
func TestRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bug  string
		fail []string
	}{{"", nil}, {"check-then-act", []string{"C06"}}} {
		var bugs []string
		if tc.bug != "" {
			bugs = []string{tc.bug}
		}
		a, err := New(Config{Scenario: labScenario(t, true), Targets: []*url.URL{startLab(t, bugs...)}, Checks: []string{"C03", "C06"},
			Quiet: 10 * time.Millisecond, Rand: rand.New(rand.NewPCG(1, 2))})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := a.MaxPlanned(), CalibrationRequests+4+c06Rounds*c06Copies; got != want {
			t.Errorf("MaxPlanned = %d, want %d", got, want)
		}
		sc, err := a.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var failed []string
		for _, c := range sc.Checks {
			if c.Result == Fail {
				failed = append(failed, c.ID)
			}
			if (c.ID == "C03" || c.ID == "C06") && c.Result != Skipped && c.JudgedBy != ByEffects {
				t.Errorf("%s judged by %q, want effects", c.ID, c.JudgedBy)
			}
		}
		if !cmp.Equal(failed, tc.fail) {
			t.Errorf("bug %q: failed %v, want %v\n%+v", tc.bug, failed, tc.fail, sc.Checks)
		}
		if sc.Requests > a.MaxPlanned() {
			t.Errorf("sent %d requests, planned at most %d", sc.Requests, a.MaxPlanned())
		}
		ev := sc.Checks[5].Evidence // C06
		if len(ev) == 0 || len(ev[0].Key) != 36 || ev[0].Headers["Authorization"] != "xxxxx" {
			t.Errorf("C06 evidence = %+v; want a UUID key and the credential masked", ev)
		}
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	u := startLab(t)
	if _, err := New(Config{Scenario: labScenario(t, false), Targets: []*url.URL{u}, Volatile: []string{"$["}}); !errors.Is(err, ErrConfig) {
		t.Errorf("bad volatile path: %v, want ErrConfig", err)
	}
	if _, err := New(Config{Scenario: labScenario(t, false), Targets: []*url.URL{u}, Errors: "sometimes"}); !errors.Is(err, ErrConfig) {
		t.Errorf("bad policy: %v, want ErrConfig", err)
	}
	down, _ := url.Parse("http://127.0.0.1:1")
	a, err := New(Config{Scenario: labScenario(t, false), Targets: []*url.URL{down}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background()); !errors.Is(err, ErrTarget) {
		t.Errorf("unreachable target: %v, want ErrTarget", err)
	}
	// An oracle that counts something else is refused before any check
	// runs.
	sc := labScenario(t, true)
	sc.Oracles[0].Effects.PerKey.Value = "$.charges[0].amount"
	a, err = New(Config{Scenario: sc, Targets: []*url.URL{u}, Quiet: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background()); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "counts 100 effects") {
		t.Errorf("an oracle counting amounts: %v, want ErrConfig", err)
	}
	// A cap too small for the calibration and a check: the check is skipped.
	a, err = New(Config{Scenario: labScenario(t, false), Targets: []*url.URL{u}, Checks: []string{"C06"}, MaxRequests: 20})
	if err != nil {
		t.Fatal(err)
	}
	card, err := a.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c := card.Checks[5]; c.Result != Skipped || !strings.Contains(c.Summary, "--max-requests 20") || card.Requests != CalibrationRequests || card.Result != Inconclusive {
		t.Errorf("C06 under a cap of 20: %s %q, %d requests, %s", c.Result, c.Summary, card.Requests, card.Result)
	}
}

func TestWriteFormats(t *testing.T) {
	one := 1
	sc := &Scorecard{FormatVersion: 1, Target: "http://h/charges", Method: "POST", Profile: "draft", Oracle: "none", Requests: 3,
		Checks: []Check{
			{ID: "C01", Name: "missing-key", Severity: Medium, Result: Pass, Summary: "400", JudgedBy: ByAnswers, Evidence: []Evidence{}},
			{ID: "C06", Name: "concurrent-same-key", Severity: Critical, Result: Fail, Summary: "two | resources", JudgedBy: ByAnswers,
				Evidence: []Evidence{{Probe: "round 1: copy 1", Request: "POST http://h/charges", Key: "k", Status: 201, Answer: `{"id":"ch_1"}`, Effects: &one}}},
		}}
	sc.decide("")
	for _, f := range Formats() {
		var b bytes.Buffer
		if err := Write(&b, f, sc); err != nil {
			t.Fatalf("Write(%s) = %v", f, err)
		}
		for _, want := range []string{"C06", "concurrent-same-key"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("Write(%s) lacks %q:\n%s", f, want, b.String())
			}
		}
	}
	var b bytes.Buffer
	_ = Write(&b, FormatJSON, sc)
	if !strings.Contains(b.String(), `"result": "violated"`) || !strings.Contains(b.String(), `"evidence": []`) || strings.Contains(b.String(), "null") {
		t.Errorf("JSON scorecard:\n%s", b.String())
	}
	sc.Checks = append(sc.Checks, Check{ID: "C10", Name: "timeout-in-flight", Severity: Critical, Result: Unknown, Summary: "cannot tell", Evidence: []Evidence{}})
	for opt, want := range map[string]string{"": `<error message="unknown: cannot tell" type="inconclusive">`, "failure": `<failure message="unknown: cannot tell" type="inconclusive">`} {
		b.Reset()
		if err := WriteWith(&b, FormatJUnit, sc, Options{JUnitInconclusive: opt}); err != nil || !strings.Contains(b.String(), want) {
			t.Errorf("junit with --junit-inconclusive %q: %v, want %s in\n%s", opt, err, want, b.String())
		}
	}
	if err := Write(&b, "yaml", sc); err == nil {
		t.Error("Write(yaml) = nil error")
	}
}
