package trial

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/scenarios"
)

// TestBatteryPlan: what the consumer battery will run of a scenario, and
// why it skips what it skips, before anything is published.
func TestBatteryPlan(t *testing.T) {
	t.Parallel()
	stream, err := scenarios.Builtin("stream-charges")
	if err != nil {
		t.Fatal(err)
	}
	skips := func(plan []PlannedCheck) map[string]string {
		out := map[string]string{}
		for _, p := range plan {
			out[p.ID] = p.Skip
		}
		return out
	}
	plan, err := BatteryPlan(stream, BatteryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := skips(plan); s["Q01"] != "" || !strings.Contains(s["Q02"], "no consumer_cut") || s["Q03"] != "" || s["Q04"] != "" {
		t.Errorf("stream-charges: skips %v, want Q02 alone (no consumer_cut)", s)
	}
	if plan[0].Messages != 2*DefaultBatteryMessages || plan[3].Messages != DefaultBatteryMessages+1 {
		t.Errorf("messages %d (Q01), %d (Q04); want %d, %d", plan[0].Messages, plan[3].Messages, 2*DefaultBatteryMessages, DefaultBatteryMessages+1)
	}

	// a count cannot tell a republish from a new message: Q03 is skipped
	counted := *stream
	counted.Oracles = []scenarios.Oracle{{Name: "likes", Counter: &scenarios.CounterOracle{}}}
	counted.Invariants = []scenarios.Invariant{{Check: "exact_counter", Oracle: "likes"}}
	plan, err = BatteryPlan(&counted, BatteryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := skips(plan); !strings.Contains(s["Q03"], "exact_counter") || s["Q01"] != "" {
		t.Errorf("a counted scenario: skips %v, want Q03 skipped for its count", s)
	}

	// the cap: what no longer fits is skipped, what fits runs
	plan, _ = BatteryPlan(stream, BatteryOptions{MaxMessages: 25, Checks: []string{"Q01", "Q03", "Q04"}})
	if s := skips(plan); s["Q01"] != "" || !strings.Contains(s["Q03"], "no longer fit") || !strings.Contains(s["Q02"], "not selected") {
		t.Errorf("cap 25: skips %v, want Q01 run, Q03 over the cap, Q02 not selected", s)
	}

	for _, tc := range []struct {
		name   string
		sc     func() *scenarios.Scenario
		checks []string
		says   string
	}{
		{"an HTTP scenario", func() *scenarios.Scenario { sc, _ := scenarios.Builtin("charges-replay"); return sc }, nil, "queue scenario"},
		{"an HTTP check", func() *scenarios.Scenario { return stream }, []string{"C06"}, "Q01 to Q04"},
	} {
		if _, err := BatteryPlan(tc.sc(), BatteryOptions{Checks: tc.checks}); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.says)
		}
	}
}
