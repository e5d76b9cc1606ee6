package reports

import (
	"testing"

	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/history"
)

// TestFaultColours: every fault kind package faults injects has a colour
// of its own, none the grey of the replays and unknown kinds.
func TestFaultColours(t *testing.T) {
	if len(faults.Kinds()) > len(faultPalette) {
		t.Fatalf("%d fault kinds, %d colours in faultPalette: add colours for the new kinds", len(faults.Kinds()), len(faultPalette))
	}
	grey := faultColour(history.FaultReplay)
	seen := map[string]string{}
	for _, k := range faults.Kinds() {
		c := faultColour(k)
		if c == grey {
			t.Errorf("faultColour(%s) = %s, the grey of replays", k, c)
		}
		if other, dup := seen[c]; dup {
			t.Errorf("faultColour(%s) = faultColour(%s) = %s", k, other, c)
		}
		seen[c] = k
	}
}
