package scenarios

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
)

func TestDefaults(t *testing.T) {
	src := strings.Replace(valid, "      bulk: {path: /charges/counts, value: $.counts}\n",
		"      per_key: {path: '/charges?idempotency_key={{.Key}}', value: $.count}\n", 1) +
		"setup:\n  - {method: put, path: /accounts/a}\nfaults:\n  - {kind: duplicate, rate: 0.1}\n"
	s, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse = %v", err)
	}
	type view struct {
		Expect                Expect
		OpMethod, SetupMethod string
		ProbeMethod           string
		MaxInFlight           int
		Retry                 Retry
		Quiet                 Duration
		Concurrency, Copies   int
	}
	got := view{
		Expect: s.Expect, OpMethod: s.Operation.Method, SetupMethod: s.Setup[0].Method,
		ProbeMethod: s.Oracles[0].Effects.PerKey.Method, MaxInFlight: s.Load.MaxInFlight,
		Retry: s.Retry, Quiet: s.Quiet, Concurrency: s.Oracles[0].Effects.Concurrency, Copies: s.Faults[0].Copies,
	}
	want := view{
		Expect: ExpectPass, OpMethod: "POST", SetupMethod: "PUT", ProbeMethod: "GET", MaxInFlight: 512,
		Retry: Retry{Attempts: 5, On: []string{"fail", "info", "409", "429", "5xx"}, Backoff: Backoff{
			Initial: Duration(10 * time.Millisecond), Max: Duration(time.Second), Multiplier: 2, Jitter: 0.5}},
		Quiet: Duration(200 * time.Millisecond), Concurrency: 8, Copies: 2,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

// A value written explicitly keeps its value, even zero.
func TestDefaultsKeepExplicitZeros(t *testing.T) {
	src := valid + "quiet: 0s\nretry:\n  on: []\n  backoff: {jitter: 0, max: 5ms}\n"
	s, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse = %v", err)
	}
	if s.Quiet != 0 || s.Retry.Backoff.Jitter != 0 || len(s.Retry.On) != 0 {
		t.Errorf("quiet %v jitter %v on %v, want 0, 0, []", s.Quiet, s.Retry.Backoff.Jitter, s.Retry.On)
	}
	if s.Retry.Backoff.Initial.Std() != 5*time.Millisecond {
		t.Errorf("initial = %v, want 5ms (the default capped by max)", s.Retry.Backoff.Initial)
	}
	_, err = Parse("t.yaml", []byte(valid+"retry:\n  attempts: 0\n"))
	if err == nil || !strings.Contains(err.Error(), "retry.attempts") {
		t.Errorf("Parse(attempts: 0) = %v, want an error (not the default)", err)
	}
	// A null is the same as leaving the field out.
	s, err = Parse("t.yaml", []byte(valid+"retry:\n  on:\n"))
	if err != nil || len(s.Retry.On) != 5 {
		t.Errorf("Parse(on: null) = %v, %v, want the default", s.Retry.On, err)
	}
}

// A scenario built in Go has no Lines: its zero values are defaulted and
// Validate reports at line 0.
func TestValidateInGo(t *testing.T) {
	s := &Scenario{
		Name:       "go",
		Operation:  Operation{Request: Request{Path: "/x"}, Key: KeyPlace{None: true}},
		Load:       Load{Ops: 1, Concurrency: 1},
		Faults:     []Fault{{Kind: "reset"}},
		Invariants: []Invariant{{Check: CheckSameResponse}},
	}
	s.applyDefaults()
	ds := s.Validate()
	if len(ds) != 1 || ds[0].Field != "faults[0].rate" || ds[0].Line != 0 {
		t.Errorf("Validate() = %v, want one problem: faults[0].rate required", ds)
	}
	s.Faults[0].Rate = 0.1
	if ds := s.Validate(); ds != nil {
		t.Errorf("Validate() = %v, want nil", ds)
	}
}

func TestTargetURL(t *testing.T) {
	tests := []struct {
		target, override string
		want             string // "" for an error
		wantLine         int
	}{
		{"http://localhost:8080", "", "http://localhost:8080", 0},
		{"http://localhost:8080", "https://staging.example.com/api", "https://staging.example.com/api", 0},
		{"", "http://127.0.0.1:9/", "http://127.0.0.1:9/", 0},
		{"", "", "", 0},
		{"", "localhost:8080", "", 0},
		{"", "ftp://x", "", 0},
		{"", "http://", "", 0},
		{"", "http://x/?a=1", "", 0},
		{"", "http://[::1", "", 0},
	}
	for _, tt := range tests {
		s := &Scenario{Target: tt.target}
		u, err := s.TargetURL(tt.override)
		if tt.want == "" {
			var ds Diagnostics
			if err == nil || !errors.As(err, &ds) || ds[0].Hint == "" {
				t.Errorf("TargetURL(%q) with target %q = %v, %v, want Diagnostics with a hint", tt.override, tt.target, u, err)
			}
			continue
		}
		if err != nil || u.String() != tt.want {
			t.Errorf("TargetURL(%q) with target %q = %v, %v, want %s", tt.override, tt.target, u, err, tt.want)
		}
	}
	// A bad target from the file points at its line.
	s := &Scenario{Source: "t.yaml", Target: "nope", Lines: map[string]int{"target": 7}}
	_, err := s.TargetURL("")
	var ds Diagnostics
	if !errors.As(err, &ds) || ds[0].Line != 7 || ds[0].Source != "t.yaml" {
		t.Errorf("TargetURL() = %v, want a diagnostic at t.yaml:7", err)
	}
}

func TestRetryable(t *testing.T) {
	s := &Scenario{Retry: Retry{On: DefaultRetryOn()}}
	only := &Scenario{Retry: Retry{On: []string{"info", "4xx"}}}
	tests := []struct {
		s       *Scenario
		outcome history.Outcome
		status  int
		want    bool
	}{
		{s, history.Fail, 0, true},
		{s, history.Info, 0, true},
		{s, history.OK, 200, false},
		{s, history.OK, 201, false},
		{s, history.OK, 409, true},
		{s, history.OK, 429, true},
		{s, history.OK, 422, false},
		{s, history.OK, 500, true},
		{s, history.OK, 503, true},
		{only, history.Fail, 0, false},
		{only, history.Info, 0, true},
		{only, history.OK, 404, true},
		{only, history.OK, 502, false},
		{&Scenario{}, history.Info, 0, false},
	}
	for _, tt := range tests {
		if got := tt.s.Retryable(tt.outcome, tt.status); got != tt.want {
			t.Errorf("Retryable(%v, %d) with on %v = %v, want %v", tt.outcome, tt.status, tt.s.Retry.On, got, tt.want)
		}
	}
}

func TestFaultSpecs(t *testing.T) {
	s := &Scenario{Faults: []Fault{
		{Kind: "timeout", Rate: 0.3, After: Duration(15 * time.Millisecond), Attempts: []int{1}},
		{Kind: "duplicate", Rate: 0.1, Copies: 3},
		{Kind: "delay", Rate: 0.2, Delay: Duration(time.Millisecond)},
	}}
	want := []faults.Spec{
		{Kind: "timeout", Rate: 0.3, After: 15 * time.Millisecond, Attempts: []int{1}},
		{Kind: "duplicate", Rate: 0.1, Copies: 3},
		{Kind: "delay", Rate: 0.2, Delay: time.Millisecond},
	}
	got := s.FaultSpecs()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FaultSpecs() (-want +got):\n%s", diff)
	}
	got[0].Attempts[0] = 9
	if s.Faults[0].Attempts[0] != 1 {
		t.Errorf("FaultSpecs shares Attempts with the scenario")
	}
	if _, err := faults.NewPlan(1, got); err != nil {
		t.Errorf("NewPlan(FaultSpecs()) = %v, want nil", err)
	}
}

func TestChecks(t *testing.T) {
	want := []string{"at_most_once", "conditional_update", "exact_counter", "exactly_once", "payload_mismatch", "same_response"}
	if diff := cmp.Diff(want, Checks()); diff != "" {
		t.Errorf("Checks() (-want +got):\n%s", diff)
	}
}

func TestDefaultsReplay(t *testing.T) {
	src := strings.Replace(valid, "  key: {header: Idempotency-Key}\n",
		"  key: {header: Idempotency-Key, value: 'k-{{.Seq}}'}\n  replay: {after: 1500ms}\n", 1)
	s, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse = %v", err)
	}
	want := Replay{Count: 1, After: Duration(1500 * time.Millisecond)}
	if diff := cmp.Diff(&want, s.Operation.Replay); diff != "" {
		t.Errorf("replay defaults (-want +got):\n%s", diff)
	}
	if s.Retention.Std() != 24*time.Hour || s.Operation.Key.Value != "k-{{.Seq}}" {
		t.Errorf("retention %v, key value %q, want 24h, k-{{.Seq}}", s.Retention, s.Operation.Key.Value)
	}
	// No replay: none is invented.
	s, err = Parse("t.yaml", []byte(valid))
	if err != nil || s.Operation.Replay != nil {
		t.Errorf("Parse(valid) replay = %+v, %v, want nil, nil", s.Operation.Replay, err)
	}
}
