package checks

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/history"
)

// A run whose requests did not all render made a smaller load than the
// one it describes: what held is inconclusive, never met; a caught
// violation still stands.
func TestUnsentOpsAreInconclusive(t *testing.T) {
	unrendered := history.Attempt{Outcome: history.Fail, Err: RenderErrPrefix + `template: operation.body: executing: nope`}
	for _, tc := range []struct {
		name   string
		expect string
		ops    []op
		want   Result
	}{
		{"every op sent", "pass", []op{o("a", ok(201)), o("b", ok(201))}, Met},
		{"ops never sent", "pass", []op{o("a", ok(201)), o("b", unrendered), o("c", unrendered)}, Inconclusive},
		{"before read failed", "pass", []op{o("a", ok(201)), o("b", history.Attempt{Outcome: history.Fail, Err: BeforeErrPrefix + "GET /accounts: status 500"})}, Inconclusive},
		{"a reset is no such op", "pass", []op{o("a", ok(201)), o("b", failed(), ok(201))}, Met},
	} {
		h := hist(tc.ops...)
		h.Meta.Judge = history.Judge{Expect: tc.expect, Invariants: []history.Invariant{{Check: SameResponse}}}
		j := Judge(h, Measured{})
		if j.Result != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, j.Result, j.Why, tc.want)
		}
		if tc.want == Inconclusive && !strings.Contains(j.Why, "never sent") {
			t.Errorf("%s: why = %q, want it to say ops were never sent", tc.name, j.Why)
		}
	}
}
