package faults

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// nemesisSpec is a valid nemesis.
func nemesisSpec() Spec {
	return Spec{Kind: KindNemesis, Stop: []string{"kill", "-9", "1234"}, Start: []string{"./serve"}, At: 0.4, Every: 2 * time.Second,
		Ready: "GET /healthz", ReadyTimeout: 5 * time.Second}
}

func TestParseShare(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Share
		ok   bool
	}{
		{"40%", 0.4, true}, {"0.4", 0.4, true}, {" 2.5 % ", 0.025, true}, {"100%", 1, true},
		{"", 0, false}, {"%", 0, false}, {"forty", 0, false}, {"NaN", 0, false}, {"Inf%", 0, false},
	} {
		got, err := ParseShare(tc.in)
		if (err == nil) != tc.ok || math.Abs(float64(got-tc.want)) > 1e-12 {
			t.Errorf("ParseShare(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
	if got := Share(0.4).String(); got != "40%" {
		t.Errorf("Share(0.4).String() = %q, want 40%%", got)
	}
}

func TestCheckNemesis(t *testing.T) {
	if err := CheckNemesis(nemesisSpec()); err != nil {
		t.Fatalf("CheckNemesis(valid) = %v", err)
	}
	noStart := nemesisSpec()
	noStart.Start, noStart.Ready, noStart.Every, noStart.ReadyTimeout = nil, "", 0, 0
	if err := CheckNemesis(noStart); err != nil {
		t.Errorf("CheckNemesis(no start, no ready, no every) = %v: the platform may restart the target", err)
	}
	for _, tc := range []struct {
		name   string
		edit   func(*Spec)
		fields []string
	}{
		{"no stop", func(s *Spec) { s.Stop = nil }, []string{"stop"}},
		{"empty stop name", func(s *Spec) { s.Stop = []string{" ", "x"} }, []string{"stop"}},
		{"empty start name", func(s *Spec) { s.Start = []string{""} }, []string{"start"}},
		{"no at", func(s *Spec) { s.At = 0 }, []string{"at"}},
		{"at 100%", func(s *Spec) { s.At = 1 }, []string{"at"}},
		{"negative at", func(s *Spec) { s.At = -0.1 }, []string{"at"}},
		{"NaN at", func(s *Spec) { s.At = Share(math.NaN()) }, []string{"at"}},
		{"negative every", func(s *Spec) { s.Every = -time.Second }, []string{"every"}},
		{"negative ready_timeout", func(s *Spec) { s.ReadyTimeout = -time.Second }, []string{"ready_timeout"}},
		{"ready without a method", func(s *Spec) { s.Ready = "/healthz" }, []string{"ready"}},
		{"ready without a slash", func(s *Spec) { s.Ready = "GET healthz" }, []string{"ready"}},
		{"ready in lower case", func(s *Spec) { s.Ready = "get /healthz" }, []string{"ready"}},
		{"per-attempt parameters", func(s *Spec) { s.Rate, s.After, s.Attempts = 0.2, time.Second, []int{1} }, []string{"rate", "attempts", "after"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := nemesisSpec()
			tc.edit(&s)
			var fields []string
			for _, se := range collectSpecErrors(CheckNemesis(s)) {
				fields = append(fields, se.Field)
			}
			if diff := cmp.Diff(tc.fields, fields); diff != "" {
				t.Errorf("CheckNemesis problems (-want +got):\n%s", diff)
			}
		})
	}
}

// A nemesis is not a per-attempt fault: New refuses it, NewPlan leaves it
// out (it never picks it, its rate counts for nothing), ParseSpec
// refuses it, and the other kinds refuse its parameters.
func TestNemesisIsNotPerAttempt(t *testing.T) {
	if f, err := New(nemesisSpec()); err == nil || f != nil {
		t.Errorf("New(nemesis) = %v, %v; want an error", f, err)
	} else if se := collectSpecErrors(err); len(se) != 1 || se[0].Field != "kind" {
		t.Errorf("New(nemesis) error = %v, want one problem with kind", err)
	}
	specs := []Spec{nemesisSpec(), {Kind: KindDropAck, Rate: 1}}
	p, err := NewPlan(7, specs)
	if err != nil {
		t.Fatalf("NewPlan with a nemesis: %v", err)
	}
	for op := range 50 {
		if f := p.Pick(op, 1); f == nil || f.Kind() != KindDropAck {
			t.Fatalf("Pick(%d, 1) = %v, want drop_ack at rate 1 beside the nemesis", op, f)
		}
	}
	if _, err := ParseSpec("nemesis=1"); err == nil {
		t.Error(`ParseSpec("nemesis=1") = nil error: a proxy must not take a nemesis`)
	}
	_, err = New(Spec{Kind: KindTimeout, Rate: 0.1, After: time.Second, Stop: []string{"kill"}, At: 0.5})
	var fields []string
	for _, se := range collectSpecErrors(err) {
		fields = append(fields, se.Field)
	}
	if diff := cmp.Diff([]string{"stop", "at"}, fields); diff != "" {
		t.Errorf("a timeout with nemesis parameters: problems (-want +got):\n%s", diff)
	}
}

func TestNewNemeses(t *testing.T) {
	specs := []Spec{{Kind: KindDropAck, Rate: 0.1}, nemesisSpec(), {Kind: KindNemesis, Stop: []string{"true"}, At: 0.9}}
	ns, err := NewNemeses(3, specs)
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 2 || ns[0].Fault != 1 || ns[1].Fault != 2 {
		t.Fatalf("NewNemeses = %+v, want faults 1 and 2", ns)
	}
	if ns[0].ReadyMethod != "GET" || ns[0].ReadyPath != "/healthz" || ns[0].ReadyTimeout != 5*time.Second {
		t.Errorf("nemesis 1's readiness = %s %s within %s, want GET /healthz within 5s", ns[0].ReadyMethod, ns[0].ReadyPath, ns[0].ReadyTimeout)
	}
	if ns[1].ReadyMethod != "" || ns[1].ReadyTimeout != DefaultReadyTimeout {
		t.Errorf("nemesis 2's readiness = %q within %s, want none within %s", ns[1].ReadyMethod, ns[1].ReadyTimeout, DefaultReadyTimeout)
	}
	bad := nemesisSpec()
	bad.At = 2
	_, err = NewNemeses(3, []Spec{bad})
	var se *SpecError
	if !errors.As(err, &se) || se.Field != "at" {
		t.Errorf("NewNemeses(at 200%%) = %v, want a *SpecError on at", err)
	}
}

// The seed places each window: the same seed the same moments, another
// seed others, always within the jitter.
func TestNemesisSchedule(t *testing.T) {
	s := nemesisSpec()
	moments := map[float64]bool{}
	for seed := range uint64(200) {
		ns, err := NewNemeses(seed, []Spec{s})
		if err != nil {
			t.Fatal(err)
		}
		n := ns[0]
		m := n.Moment()
		if m < 0.4-NemesisJitter || m > 0.4+NemesisJitter {
			t.Fatalf("seed %d: Moment() = %v, want within %v of 0.4", seed, m, NemesisJitter)
		}
		again, _ := NewNemeses(seed, []Spec{s})
		if again[0].Moment() != m || again[0].Pause(2) != n.Pause(2) {
			t.Fatalf("seed %d: the same seed moved the schedule", seed)
		}
		for k := 2; k < 5; k++ {
			if p := n.Pause(k); p < 1800*time.Millisecond || p > 2200*time.Millisecond {
				t.Fatalf("seed %d: Pause(%d) = %v, want within a tenth of 2s", seed, k, p)
			}
		}
		moments[m] = true
	}
	if len(moments) < 150 {
		t.Errorf("200 seeds gave %d distinct moments: the seed barely moves them", len(moments))
	}
	one := nemesisSpec()
	one.Every = 0
	ns, _ := NewNemeses(1, []Spec{one})
	if p := ns[0].Pause(2); p != 0 {
		t.Errorf("Pause without every = %v, want 0 (one window)", p)
	}
	early := nemesisSpec()
	early.At = 0.01
	ns, _ = NewNemeses(1, []Spec{early})
	if m := ns[0].Moment(); m < 0.01 {
		t.Errorf("at 1%%: Moment() = %v, want at least 0.01 (while the load runs)", m)
	}
}
