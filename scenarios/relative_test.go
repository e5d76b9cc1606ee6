package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/faults"
)

// A timeout's after may be relative to the latency measured before the
// load (p50, p90, 0.5x), beside a duration as ever; only after may be.
func TestRelativeAfter(t *testing.T) {
	for text, want := range map[string]faults.Spec{
		"0.5x": {Kind: "timeout", Rate: 0.1, Relative: faults.Relative{Percentile: 50, Factor: 0.5}},
		"p90":  {Kind: "timeout", Rate: 0.1, Relative: faults.Relative{Percentile: 90, Factor: 1}},
		"50ms": {Kind: "timeout", Rate: 0.1, After: 50 * time.Millisecond},
	} {
		s, err := Parse("t.yaml", []byte(valid+"faults:\n  - {kind: timeout, rate: 0.1, after: "+text+"}\n"))
		if err != nil {
			t.Fatalf("Parse(after: %s) = %v", text, err)
		}
		if got := s.Faults[0]; got.After != want.After || got.Relative != want.Relative {
			t.Errorf("Parse(after: %s) = after %v relative %+v, want %v %+v", text, got.After, got.Relative, want.After, want.Relative)
		}
	}
	// Two faults on one line each get their own.
	s, err := Parse("t.yaml", []byte(valid+"faults: [{kind: timeout, rate: 0.1, after: p50}, {kind: timeout, rate: 0.1, after: 0.25x}]\n"))
	if err != nil || s.Faults[0].Relative.String() != "p50" || s.Faults[1].Relative.String() != "0.25x" {
		t.Fatalf("Parse(two relative faults on a line) = %+v, %v", s, err)
	}
	line := strings.Count(valid, "\n") + 4
	checkDiags(t, diagnose(t, valid+"faults:\n  - kind: delay\n    rate: 0.1\n    delay: 0.5x\n"),
		[]want{{line, "faults[0].delay", "only a timeout's after may be relative"}})
	checkDiags(t, diagnose(t, valid+"faults:\n  - kind: timeout\n    rate: 0.1\n    after: p99\n"),
		[]want{{line, "faults[0].after", "a relative deadline is p50, p90 or a factor"}})
	checkDiags(t, diagnose(t, valid+"faults:\n  - kind: reset\n    rate: 0.1\n    after: 0.5x\n"),
		[]want{{line, "faults[0].after", "only a timeout fault takes after"}})
}
