package faults

import (
	"strings"
	"testing"
	"time"
)

func TestParseSpec(t *testing.T) {
	good := map[string]Spec{
		"drop_ack=0.1":            {Kind: "drop_ack", Rate: 0.1},
		"timeout=0.05,after=50ms": {Kind: "timeout", Rate: 0.05, After: 50 * time.Millisecond},
		"duplicate=0.2,copies=3":  {Kind: "duplicate", Rate: 0.2, Copies: 3},
		"delay=1,delay=20ms":      {Kind: "delay", Rate: 1, Delay: 20 * time.Millisecond},
	}
	for in, want := range good {
		got, err := ParseSpec(in)
		if err != nil || got.Kind != want.Kind || got.Rate != want.Rate || got.After != want.After || got.Copies != want.Copies || got.Delay != want.Delay {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"drop_ack", "drop_ack=x", "timeout=0.1,after=5", "duplicate=0.1,copies=x", "delay=0.1,wait=5ms", "reset=0.1,foo"} {
		if _, err := ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%q) = nil error, want one", bad)
		}
	}
}

// TestParseSpecFollowsParams: ParseSpec takes RATE and exactly the
// kind-specific parameters Params declares, each setting its own field of
// the spec; attempts is refused, since a proxy sees every request as a
// first attempt.
func TestParseSpecFollowsParams(t *testing.T) {
	for _, p := range Params() {
		switch {
		case p.Name == "rate":
			spec, err := ParseSpec(KindDropAck + "=" + p.Example)
			if err != nil || !p.IsSet(spec) {
				t.Errorf("ParseSpec(drop_ack=%s) = %+v, %v; want the rate set", p.Example, spec, err)
			}
		case p.Kind == "":
			in := KindDropAck + "=0.1," + p.Name + "=" + p.Example
			if _, err := ParseSpec(in); err == nil || !strings.Contains(err.Error(), "unknown parameter") {
				t.Errorf("ParseSpec(%q) = %v, want unknown parameter %s", in, err, p.Name)
			}
		default:
			in := p.Kind + "=0.1"
			for _, q := range ParamsOf(p.Kind) {
				if q.Kind == p.Kind {
					in += "," + q.Name + "=" + q.Example
				}
			}
			spec, err := ParseSpec(in)
			if err != nil || !p.IsSet(spec) {
				t.Errorf("ParseSpec(%q) = %+v, %v; want %s set", in, spec, err, p.Name)
				continue
			}
			if _, err := New(spec); err != nil {
				t.Errorf("New(ParseSpec(%q)) = %v, want a valid fault", in, err)
			}
		}
	}
	_, err := ParseSpec("reset=0.1,bogus=1")
	for _, p := range Params() {
		if listed := strings.Contains(err.Error(), p.Name); listed != (p.Kind != "") {
			t.Errorf("ParseSpec(bogus param) = %v: lists %s = %v, want %v", err, p.Name, listed, !listed)
		}
	}
}

// FuzzParseSpec: the --fault grammar's parser never panics, and what it
// accepts New builds or refuses with an error, never a panic. Seeded from
// the forms the docs show.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"drop_ack=0.1", "timeout=0.2,after=15ms", "duplicate=0.3,copies=3", "reset=0.05", "delay=1,delay=2ms",
		"drop_ack", "drop_ack=NaN", "timeout=0.1,after=", "x=1,copies=2,after=1s", "=,=", "duplicate=1e309,copies=-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := ParseSpec(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("ParseSpec(%q) gave an empty error", s)
			}
			return
		}
		// The parser checks the syntax; New validates the spec (a known
		// kind, a rate in [0, 1], the kind's own parameters) and must
		// answer with an error, never a panic.
		if _, err := New(spec); err == nil && (spec.Rate < 0 || spec.Rate > 1) {
			t.Fatalf("ParseSpec(%q) = %+v, and New accepted a rate outside [0, 1]", s, spec)
		}
	})
}
