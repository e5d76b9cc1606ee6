package scenarios

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// A scenario built from a request is the one the loader makes of the same
// fields written in a file: the same defaults, the same validation.
func TestFromRequestIsParse(t *testing.T) {
	spec := RequestSpec{
		Name: "probe",
		Request: Request{Method: "post", Path: "/v1/charges?mode=x", Body: `{"amount":100,"customer":"cus_{{.Seq}}"}`,
			Headers: map[string]string{"Authorization": `Bearer {{env "API_TOKEN"}}`}},
		Key:         KeyPlace{Header: "Idempotency-Key"},
		Targets:     []string{"http://127.0.0.1:9"},
		ProfileName: "stripe",
		Load:        Load{Ops: 3, Concurrency: 1},
		Retry:       Retry{Attempts: 1},
		Oracles: []Oracle{{Name: "effects", Effects: &EffectsOracle{
			PerKey: &Probe{Request: Request{Path: "/charges?k={{.Key}}"}, Value: "$.count"}, Across: AcrossSum}}},
		Invariants: []Invariant{{Check: "at_most_once", Oracle: "effects"}},
	}
	got, err := FromRequest("command line", spec)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Parse("command line", []byte(`name: probe
profile: stripe
target: [http://127.0.0.1:9]
operation:
  method: post
  path: /v1/charges?mode=x
  headers: {Authorization: 'Bearer {{env "API_TOKEN"}}'}
  body: '{"amount":100,"customer":"cus_{{.Seq}}"}'
  key: {header: Idempotency-Key}
load: {ops: 3, concurrency: 1}
retry: {attempts: 1}
oracles:
  - name: effects
    effects:
      per_key: {path: '/charges?k={{.Key}}', value: $.count}
      across: sum
invariants:
  - {check: at_most_once, oracle: effects}
`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Scenario{}, "Lines")); diff != "" {
		t.Errorf("FromRequest differs from Parse of the same fields (-Parse +FromRequest):\n%s", diff)
	}
	if got.Retry.Backoff.Max != Duration(DefaultBackoffMax) || got.Load.MaxInFlight != DefaultMaxInFlight || got.Operation.Method != "POST" {
		t.Errorf("FromRequest left defaults out: retry %+v, load %+v, method %q", got.Retry, got.Load, got.Operation.Method)
	}
}

// Every problem is reported at once, each naming its field, none with a
// line.
func TestFromRequestDiagnostics(t *testing.T) {
	_, err := FromRequest("command line", RequestSpec{
		Name:       "probe",
		Request:    Request{Method: "POST", Path: "/x", Body: `{"a":{{.Nope}}`},
		Key:        KeyPlace{BodyField: "op_id"},
		Targets:    []string{"ftp://x"},
		Load:       Load{Ops: 1, Concurrency: 1},
		Invariants: []Invariant{{Check: "same_response"}},
	})
	var ds Diagnostics
	if !errors.As(err, &ds) {
		t.Fatalf("FromRequest = %v, want Diagnostics", err)
	}
	fields := map[string]bool{}
	for _, d := range ds {
		fields[d.Field] = true
		if d.Line != 0 || d.Source != "command line" || !strings.HasPrefix(d.String(), "command line: "+d.Field+": ") {
			t.Errorf("diagnostic %q: want it at the source, without a line", d)
		}
	}
	for _, f := range []string{"operation.body", "target"} {
		if !fields[f] {
			t.Errorf("diagnostics %v: none on %s", ds, f)
		}
	}
	// A load is needed, as in a file.
	if _, err := FromRequest("command line", RequestSpec{Name: "x", Request: Request{Path: "/"}, Key: KeyPlace{None: true},
		Targets: []string{"http://x"}, Invariants: []Invariant{{Check: "same_response"}}}); err == nil || !strings.Contains(err.Error(), "load") {
		t.Errorf("FromRequest without a load = %v, want the loader's load diagnostic", err)
	}
}
