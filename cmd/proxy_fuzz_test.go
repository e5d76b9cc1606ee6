package cmd

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/faults"
)

// FuzzParseFault: the proxy's --fault parser never panics, names the flag
// in its errors, and what it accepts the faults package builds or refuses
// with an error, never a panic. Seeded from the forms the docs show.
func FuzzParseFault(f *testing.F) {
	for _, s := range []string{"drop_ack=0.1", "timeout=0.2,after=15ms", "duplicate=0.3,copies=3", "reset=0.05", "delay=1,delay=2ms",
		"drop_ack", "drop_ack=NaN", "timeout=0.1,after=", "x=1,copies=2,after=1s", "=,=", "duplicate=1e309,copies=-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := parseFault(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--fault ") {
				t.Fatalf("parseFault(%q) error %q does not name the flag", s, err)
			}
			return
		}
		// The parser checks the syntax; faults.New validates the spec (a
		// known kind, a rate in [0, 1], the kind's own parameters) and must
		// answer with an error, never a panic.
		if _, err := faults.New(spec); err == nil && (spec.Rate < 0 || spec.Rate > 1) {
			t.Fatalf("parseFault(%q) = %+v, and faults.New accepted a rate outside [0, 1]", s, spec)
		}
	})
}
