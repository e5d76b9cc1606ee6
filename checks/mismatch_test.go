package checks

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/idemcheck/idemcheck/history"
)

// mm is a mismatch attempt (another payload under the key) answered status;
// rp is a replay of the op's own request answered status with body fp.
func mm(status int) history.Attempt {
	return history.Attempt{Outcome: history.OK, Status: status, Fault: history.FaultMismatch, Fingerprint: 99}
}
func mmLost() history.Attempt {
	return history.Attempt{Outcome: history.Info, Fault: history.FaultMismatch, Err: "timeout"}
}
func rp(status int, fp history.Fingerprint) history.Attempt {
	return history.Attempt{Outcome: history.OK, Status: status, Fault: history.FaultReplay, Fingerprint: fp}
}

func TestPayloadMismatch(t *testing.T) {
	tests := []struct {
		name        string
		h           *history.History
		want        brief
		wantProblem string // in the first example
		wantSummary string
	}{
		{"every mismatch rejected", hist(o("a", ok(201), mm(422)), o("b", lost(), ok(201), mm(409)), o("c", ok(201), mm(400))),
			brief{Status: Pass, Checked: 3}, "", "400 ×1, 409 ×1, 422 ×1"},
		{"a silent replay", hist(o("a", ok(201), mm(422)), o("b", ok(201), mm(201))),
			brief{Status: Fail, Checked: 2, Violations: 1, Examples: 1},
			"same key, other payload: answered 201 — a silent replay or a second execution", "1 of 2 ops"},
		{"a server error alone decides nothing", hist(o("a", ok(201), mm(503))),
			brief{Status: Unknown}, "", "got an answer"},
		{"a server error beside a rejection", hist(o("a", ok(201), mm(503)), o("b", ok(201), mm(422))),
			brief{Status: Pass, Checked: 1}, "", "422 ×1"},
		{"a redirect is no rejection", hist(o("a", ok(201), mm(303))),
			brief{Status: Fail, Checked: 1, Violations: 1, Examples: 1}, "answered 303", ""},
		{"unanswered mismatches are not checked", hist(o("a", ok(201), mmLost()), o("b", ok(201), mm(422))),
			brief{Status: Pass, Checked: 1}, "", "1 op sent"},
		{"no mismatch answered", hist(o("a", ok(201), mmLost())),
			brief{Status: Unknown}, "", "none of 1 attempt with another payload got an answer"},
		{"no mismatch sent", hist(o("a", ok(201), rp(201, 1))),
			brief{Status: Unknown}, "", "operation.replay.body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Check(tt.h, history.Invariant{Check: PayloadMismatch}, nil)
			if diff := cmp.Diff(tt.want, briefOf(v)); diff != "" {
				t.Errorf("Check(payload_mismatch) (-want +got):\n%s\nsummary: %s", diff, v.Summary)
			}
			if !strings.Contains(v.Summary, tt.wantSummary) {
				t.Errorf("Summary = %q, want it to contain %q", v.Summary, tt.wantSummary)
			}
			if tt.wantProblem == "" {
				return
			}
			e := v.Examples[0]
			if !strings.Contains(e.Problem, tt.wantProblem) || e.Want != "a 4xx (422)" || e.Effects != 0 {
				t.Errorf("example %+v, want problem %q, want a 4xx (422)", e, tt.wantProblem)
			}
			if !slices.ContainsFunc(e.Attempts, func(a history.Attempt) bool { return a.Fault == history.FaultMismatch }) || len(e.Attempts) < 2 {
				t.Errorf("example attempts %+v, want the op's attempts, the mismatch included", e.Attempts)
			}
		})
	}
}

func TestPayloadMismatchIsKnown(t *testing.T) {
	if !slices.Contains(Names(), PayloadMismatch) {
		t.Errorf("Names() = %v, want payload_mismatch among them", Names())
	}
	if kind, ok := OracleKind(PayloadMismatch); kind != "" || !ok {
		t.Errorf("OracleKind(payload_mismatch) = %q, %v, want \"\", true", kind, ok)
	}
}

// same_response compares replays of the op's own request and ignores
// answers to another payload.
func TestSameResponseReplays(t *testing.T) {
	tests := []struct {
		name string
		h    *history.History
		want brief
	}{
		{"replay identical, mismatch rejected", hist(o("a", ok(201), rp(201, 1), mm(422))),
			brief{Status: Pass, Checked: 1}},
		{"mismatch answered with another body is not this check's", hist(o("a", ok(201), mm(201))),
			brief{Status: Pass, Checked: 1}},
		{"replay with a fresh body (key stored without its response)", hist(o("a", ok(201), rp(201, 2)), o("b", ok(201), rp(201, 1))),
			brief{Status: Fail, Checked: 2, Violations: 1, Examples: 1}},
		{"replay re-executed after the key expired", hist(o("a", lost(), ok(201), rp(201, 7))),
			brief{Status: Fail, Checked: 1, Violations: 1, Examples: 1}},
	}
	for _, tt := range tests {
		v := Check(tt.h, history.Invariant{Check: SameResponse}, nil)
		if diff := cmp.Diff(tt.want, briefOf(v)); diff != "" {
			t.Errorf("%s: Check(same_response) (-want +got):\n%s", tt.name, diff)
		}
	}
}

// A mismatch attempt is another request: its answer neither acknowledges
// the op nor makes it indeterminate; its effects count against the key.
func TestEffectsWithMismatch(t *testing.T) {
	tests := []struct {
		name  string
		check string
		h     *history.History
		e     map[string]int
		want  brief
	}{
		{"rejected mismatch, one effect", ExactlyOnce, hist(o("a", ok(201), mm(422)), o("b", ok(201), rp(201, 1), mm(409))),
			map[string]int{"a": 1, "b": 1}, brief{Status: Pass, Checked: 2}},
		{"mismatch executed a second time", AtMostOnce, hist(o("a", ok(201), mm(201))),
			map[string]int{"a": 2}, brief{Status: Fail, Checked: 1, Violations: 1, Extra: 1, Examples: 1}},
		{"mismatch executed a second time, exactly once", ExactlyOnce, hist(o("a", ok(201), mm(201))),
			map[string]int{"a": 2}, brief{Status: Fail, Checked: 1, Violations: 1, Extra: 1, Examples: 1}},
		{"a 422 does not make a never-sent op indeterminate", ExactlyOnce, hist(o("a", failed(), mm(422))),
			map[string]int{"a": 1}, brief{Status: Fail, Checked: 1, Violations: 1, Extra: 1, Examples: 1}},
		{"a mismatch 2xx does not acknowledge the op", ExactlyOnce, hist(o("a", lost(), mm(201))),
			map[string]int{}, brief{Status: Pass, Checked: 1, Indeterminate: 1}},
	}
	for _, tt := range tests {
		v := Check(tt.h, history.Invariant{Check: tt.check, Oracle: "ledger"}, effects(tt.e))
		if diff := cmp.Diff(tt.want, briefOf(v)); diff != "" {
			t.Errorf("%s: Check(%s) (-want +got):\n%s\n%s", tt.name, tt.check, diff, v.Summary)
		}
	}
}

// A mismatch with no answer, or a 5xx, is counted as not judged.
func TestPayloadMismatchNotJudged(t *testing.T) {
	h := hist(o("a", ok(201), replayed(ok(422), history.FaultMismatch)), o("b", ok(201), replayed(ok(503), history.FaultMismatch)))
	v := Check(h, history.Invariant{Check: PayloadMismatch}, nil)
	if v.Status != Pass || v.NotJudged != 1 || !strings.HasSuffix(v.Summary, "; 1 not judged (no answer, or a 5xx)") {
		t.Errorf("Check(payload_mismatch) = %s %q (%d not judged), want pass, 1 not judged", v.Status, v.Summary, v.NotJudged)
	}
}
